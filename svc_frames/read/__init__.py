"""The read path: the pager, raw pages, the page-to-frames pipeline, helper processes,
and ``load`` (what ``read_object``, ``read_view`` and ``read_app`` run)."""
