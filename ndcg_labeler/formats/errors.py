"""The one exception every parser raises for bad input: file, line and a human reason."""

from __future__ import annotations


class FormatError(ValueError):
    """A file that cannot be read as the expected format, located as `file:line: reason`."""

    def __init__(self, filename: str, line: int | None, reason: str) -> None:
        self.filename = filename
        self.line = line
        self.reason = reason
        super().__init__(self.__str__())

    def __str__(self) -> str:
        if self.line is None:
            return f"{self.filename}: {self.reason}"
        return f"{self.filename}:{self.line}: {self.reason}"

    def __reduce__(self) -> tuple[type[FormatError], tuple[str, int | None, str]]:
        return (type(self), (self.filename, self.line, self.reason))
