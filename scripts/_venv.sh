# Shared by scripts/start and scripts/test: create the virtualenv if missing and (re)install the project
# with its dev extras whenever pyproject.toml or setup.py changed since the last install. Sourced, not executed.
VENV="${VENV:-$ROOT/.venv}"
PYTHON_BIN="${PYTHON:-python3}"
if [ ! -x "$VENV/bin/python" ]; then
    echo "==> creating virtualenv $VENV"
    "$PYTHON_BIN" -m venv "$VENV"
fi
stamp="$VENV/.elicitation-studio-installed"
want="$(cat "$ROOT/pyproject.toml" "$ROOT/setup.py" | sha256sum | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ] || ! "$VENV/bin/python" -c "import app, elicitation" 2>/dev/null; then
    echo "==> installing elicitation-studio[dev] into $VENV"
    "$VENV/bin/python" -m pip install --quiet --upgrade pip
    "$VENV/bin/python" -m pip install --quiet -e "$ROOT[dev]"
    echo "$want" > "$stamp"
fi
