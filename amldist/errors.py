"""The one exception type for mistakes a user can fix.

The CLI turns a UserError into one ``error: ...`` line (plus ``hint: ...`` when
there is one) and an exit code; anything else is a bug and keeps its traceback
behind ``--debug``.
"""

# How to get the Azure extra (azure-ai-ml, azure-identity), named the same in every hint: these are the
# public packages themselves, so the line works on any machine (amldist is installed from its repository).
INSTALL_AZURE = "pip install azure-ai-ml azure-identity (amldist's [azure] extra: pip install '.[azure]' in its clone)"


class UserError(Exception):
    """A problem in the user's input or environment, reported without a traceback."""

    def __init__(self, message: str, *, hint: str | None = None, exit_code: int = 2):
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.exit_code = exit_code

    def __str__(self) -> str:
        return self.message

    def report(self) -> str:
        """``error: MESSAGE``, then ``hint: HINT`` on a line of its own when there is one: what a script
        that catches the error should print (``str(exc)`` is the message alone, the hint is what to do)."""
        return f"error: {self.message}" + (f"\nhint: {self.hint}" if self.hint else "")
