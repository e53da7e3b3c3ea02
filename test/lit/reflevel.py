# The lit test format of lazyjit's regression tests (lit.cfg.py). In its own module so that lit's
# worker processes can unpickle it.
import lit.formats
import lit.Test


class NumericAtReferenceLevel(lit.formats.ShTest):
    """With `ref_opt` set (`--param opt=N`, CTest's lit-ref), runs only the tests with a RUN line
    that checks values (`--check` or `--emit=values`) and leaves the fusion level to the default,
    at OPT=N, so that those values are checked at the reference's level too (the test's other
    lines, pinned to a level or checking text, run as they always do). A test without such a line
    is reported unsupported in that run."""

    def __init__(self, ref_opt):
        super().__init__(execute_external=False)
        self.ref_opt = ref_opt

    def execute(self, test, lit_config):
        if self.ref_opt is not None:
            with open(test.getSourcePath(), encoding="utf-8") as f:
                runs = [line for line in f if "RUN:" in line and "%lazyjit-dump" in line]
            if not any(("--check" in r or "values" in r) and "--opt" not in r for r in runs):
                return lit.Test.Result(lit.Test.UNSUPPORTED, "no RUN line checks values at the default level")
        return super().execute(test, lit_config)
