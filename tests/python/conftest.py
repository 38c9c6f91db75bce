import os
import sys

# Tests run against the source tree's package unless an installed one is asked for.
if not os.environ.get("CONSTMEM_TEST_INSTALLED"):
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
