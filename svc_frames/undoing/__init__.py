"""Undo: one write-back run reversed through ``write_back`` itself.

* ``runs.py``   a run as an undo reads it (a Report's ``kept``, or a journal file) and
  what it cannot undo
* ``build.py``  the undo's frames (as the run left the records -> as they were), what
  cannot come back
* ``plan.py``   ``undo`` and ``UndoPlan`` (review, apply through ``write_back``, new ids)
* ``relink.py`` the repointing after the creates: links to re-created records, through
  ``write_back``'s live guard (a list changed meanwhile: read again, added to)

Usage::

    u = undo(client, "push.jsonl")
    u.lost, u.missing, u.changes
    u.apply(journal="undo.jsonl")
"""

from .plan import UndoPlan, undo

__all__ = ["undo", "UndoPlan"]
