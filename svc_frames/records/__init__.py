"""The records layer above the transport: the client of the package (``Client``), the
records of an object or a view as one resource (``Records``), and the listing protocol
(``page_params``)."""

from .client import Client
from .listing import MAX_ROWS_PER_PAGE, check_sort, page_params
from .resource import Records

__all__ = ["Client", "MAX_ROWS_PER_PAGE", "Records", "check_sort", "page_params"]
