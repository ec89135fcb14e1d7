"""The one exception the package raises for bad arguments and library failures."""


class TilesmithError(RuntimeError):
    """A call that cannot be served. `status` is the library's ts_status name where the
    library refused (TS_PACKAGE_ERROR, ...), None for an argument this package refused."""

    def __init__(self, message, status=None):
        super().__init__(message)
        self.status = status
