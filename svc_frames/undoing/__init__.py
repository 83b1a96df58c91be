"""Undo: one write-back run reversed through ``write_back`` itself.

* ``runs.py``   a run as an undo reads it (a Report's ``kept``, or a journal file) and
  what it cannot undo
* ``build.py``  the undo's frames (as the run left the records -> as they were), what
  cannot come back
* ``reversal.py`` ``Reversal``, what ``UndoPlan`` and restore's ``RestorePlan`` share:
  apply through ``write_back`` (its gate, a resumed journal), new ids, ``requests``
* ``plan.py``   ``undo`` and ``UndoPlan`` (what the run was, what the journal misses)
* ``relink.py`` the repointing after the creates (undo and restore): links to re-created
  records, through ``write_back``'s live guard (a list changed meanwhile: read again)

Usage::

    u = undo(client, "push.jsonl")
    u.lost, u.missing, u.changes
    u.apply(journal="undo.jsonl")
"""

from .plan import UndoPlan, undo

__all__ = ["undo", "UndoPlan"]
