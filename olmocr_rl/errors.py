"""One family for the errors a user fixes: bad input, a configuration to change, a missing file or
package. Every such error subclasses `UserError`; the command line catches it once, where it ends
(`olmocr_rl.cli.main`), and prints its message as one `error: ...` line. Any other exception is a
bug (ours or a library's): one line naming it as unexpected, or its traceback with `--debug`.

The concrete classes keep their older bases (ValueError, RuntimeError) so that callers who catch
those keep working.
"""


class UserError(Exception):
    """An error whose message tells the user what to fix."""


class UsageError(UserError, ValueError):
    """A value given to a function or an option that it cannot take (names the value)."""


class ConfigError(UserError, ValueError):
    """A configuration problem the user fixes by editing the config or the command line (an option,
    a model that does not load as one, a launcher that cannot start the ranks as asked)."""
