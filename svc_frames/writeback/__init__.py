"""Write edited frames back: diff -> Plan -> guard -> apply -> Report, sending only what
changed. One module per phase:

* ``plan.py``     Plan, the ColumnMap of a source (column <-> field), statuses (``Status``)
* ``diff.py``     diff (edited vs loaded -> Plan), its phases by idea beside it: ``rows.py``
  (row and index checks), ``cells.py`` (compare, encode), ``edits.py`` (what is
  collected), ``timers.py``, ``connections.py``, ``required.py``
* ``appends.py``  new rows: pd.concat, .loc[new label], add_rows (which rows are creates)
* ``analysis.py`` columns that are no field's: left out, never sent (or refused)
* ``uploads.py``  asset placement: what a file/image column writes, uploads before writes
* ``journal.py``  the on-disk journal of acknowledged writes (resumable runs)
* ``target.py``   the object or view written to (fields a view takes: ``schema.py``)
* ``state.py``    RunState: the typed state one run's phases share
* ``values.py``   server records decoded and compared like the loaded frames
* ``guard.py``    re-reads and conflicts (where a conflict is decided)
* ``apply.py``    updates, creates, deletes, lookups (where a create is retried)
* ``stamp.py``    the forms' "modified" stamp, which object writes set themselves
* ``follow.py``   frames and their ``original`` follow the server after a run
* ``interrupt.py`` a run cut short (Ctrl-C, a crash): the frames follow, the Report so far
* ``report.py``   Report, per-record Outcome, request counts, QuotaNote, the summary line
* ``budget.py``   the daily quota in a run: quota_reserve, budgeted writes
* ``gate.py``     QuotaGate: the gate every write passes (claims of the quota)
* ``run.py``      write_back (its numbered phases); ``push`` of saved frames is
  ``svc_frames/saved/push.py``, above this package

Usage::

    frames = read_object(client, "object_2")
    frames.main.loc["5d79...", "field_21.latitude"] = 30.27
    plan = diff(frames)              # what would be sent, as a DataFrame: plan.changes
    report = write_back(client, frames, journal="push.jsonl")
    report.table                     # record_id, action, fields, status, message

Rules (ARCHITECTURE.md "Write-back contract"): everything is validated before the first
request; ``write_back`` re-reads the records about to change in a few batched list
requests (the lost-update guard), then applies updates, creates and (opt-in) deletes
concurrently within the client's pace. A create is never repeated blindly: when its
outcome is unknown it is looked up first, and a journal makes an interrupted run
resumable.
"""

from .appends import add_rows
from .diff import diff
from .journal import Journal
from .plan import NEW_ID_PREFIX, Action, Plan, Status
from .report import Report
from .run import write_back

__all__ = ["Plan", "Report", "Journal", "diff", "write_back", "add_rows",
           "NEW_ID_PREFIX", "Status", "Action"]
