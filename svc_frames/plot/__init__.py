"""Quick, readable matplotlib plots of loaded frames: where, how many, and when.

Every function takes the ``Frames`` a loader returned and a field given by key
(``"field_21"``) or by label (``"Address"``), draws on ``ax`` (a new figure when omitted),
and returns the Axes. Titles and axis labels come from the field labels.

Usage::

    from svc_frames.plot import plot_counts, plot_locations, plot_over_time
    ax = plot_locations(frames, "Address", color_by="Status")
    ax.figure.savefig("locations.png")
"""


from .counts import COUNT_KINDS, plot_counts
from .locations import LOCATION_KINDS, plot_locations
from .overtime import TIME_KINDS, plot_over_time

__all__ = ["plot_locations", "plot_counts", "plot_over_time", "LOCATION_KINDS",
           "COUNT_KINDS", "TIME_KINDS"]
