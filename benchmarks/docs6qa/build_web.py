"""Build docs6qa's web.jsonl (the stand-in "web") from the Markdown docs of nhairs/python-json-logger.

Standard library only. A thin wrapper: the work is done by ../docsqa/build_web.py (imported, not
copied), with this folder's defaults for the id prefix (``python-json-logger``) and the output file
(``web.jsonl`` here). Reads the docs straight from a bare git mirror:

    python build_web.py /path/to/python-json-logger.git 806dba9d9642fbec4c8538b625494c96b288ce59

Any option of ../docsqa/build_web.py (``--prefix``, ``--out``) may still be passed and wins.
"""

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.dont_write_bytecode = True  # write nothing outside this folder
sys.path.insert(0, str(HERE.parent / "docsqa"))

import build_web  # noqa: E402  (../docsqa/build_web.py)


if __name__ == "__main__":
    build_web.main(prefix="python-json-logger", out=HERE / "web.jsonl")
