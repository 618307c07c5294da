"""A task's consecutive commands and writes as one sh script: one round trip, one lock.

    for group in batches(actions):          # Run/Write runs batch; the others stand alone
        script = batch_script(group, token, then_read=None, stage=stage)
        ... run ["sh", "-c", script, "nodeprov", token] ...
        failed, output = failed_step(stderr, token)   # which action, and what it printed

Each action is a numbered step announced on stderr (``\\n@@TOKEN step N``), so a failure names
its action. Writes are atomic (``nodeprov_write``: temp file, owner and mode kept, rename; a
link's target is what is written, the link stays).
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Sequence

from nodeprov.remote.actions import Action, Probe, Run, Write
from nodeprov.remote.facts import read_script

_ACTIONS_PRELUDE = r"""set -e
token=$1
step() { printf '\n@@%s step %s\n' "$token" "$1" >&2; }
nodeprov_write() {
  # a link is followed and its target replaced, as Ansible's lineinfile and blockinfile do
  # (renaming over it would leave a plain file where the system keeps its link); only root's
  # links, as the kernel's protected_symlinks: another user's would aim root's write
  hops=0
  while [ -L "$1" ]; do
    owner=$(stat -c %u -- "$1")
    if [ "$owner" != 0 ]; then
      echo "$1 is a symbolic link of uid $owner; nodeprov follows root's links only" >&2; exit 1
    fi
    hops=$((hops + 1)); [ "$hops" -le 8 ] || { echo "$1: too many symbolic links" >&2; exit 1; }
    to=$(readlink -- "$1")
    case $to in /*) ;; *) to=$(dirname -- "$1")/$to ;; esac
    set -- "$to" "$2" "$3" "${4-}"
  done
  dir=$(dirname -- "$1"); mkdir -p -- "$dir"
  tmp=$(mktemp "$dir/.nodeprov.XXXXXX")
  # a large content comes staged in file $4 (a command line holds 128 KiB at most)
  if [ -n "${4-}" ]; then cat -- "$4" > "$tmp" || { rm -f -- "$tmp" "$4"; exit 1; }; rm -f -- "$4"
  # dash's printf says "I/O error" for any failure: again through cat, to say which
  elif ! printf %s "$2" 2>/dev/null > "$tmp"; then
    printf %s "$2" | cat > "$tmp" || { rm -f -- "$tmp"; exit 1; }; fi
  if [ -e "$1" ]; then chown --reference="$1" -- "$tmp"; chmod --reference="$1" -- "$tmp"
  else chmod "$3" -- "$tmp"; fi
  sync -- "$tmp" 2>/dev/null || true
  # rename is atomic; a bind-mounted target (containers' /etc/hosts) refuses it: write in place
  if ! mv -f -- "$tmp" "$1" 2>/dev/null; then cat -- "$tmp" > "$1"; rm -f -- "$tmp"; fi
}
"""

# Contents past this many bytes in one batch are staged by SFTP: the batch script is one
# argument of the remote shell, and Linux takes at most 128 KiB in one (MAX_ARG_STRLEN)
INLINE_WRITES = 64 * 1024


def batches(actions: Sequence[Action]) -> list[list[Action]]:
    """Consecutive Runs and Writes grouped; every other action alone."""
    groups: list[list[Action]] = []
    for action in actions:
        if groups and _batchable(action) and _batchable(groups[-1][-1]):
            groups[-1].append(action)
        else:
            groups.append([action])
    return groups


def batch_script(batch: Sequence[Run | Write], then_read: Sequence[Probe | None] | None,
                 stage: Callable[[Write], str]) -> str:
    """The script (token as $1); ``stage`` puts a large Write's content on the
    node and returns the file's path. With ``then_read``, a last step prints what
    ``read_script(then_read)`` prints, as things are after the actions."""
    lines = [_ACTIONS_PRELUDE]
    inline = 0  # bytes of content written into the script so far
    for index, action in enumerate(batch):
        if isinstance(action, Write) and inline + len(action.content.encode()) > INLINE_WRITES:
            command = shlex.join(["nodeprov_write", action.path, "", format(action.mode, "o"),
                                  stage(action)])
        elif isinstance(action, Write):
            inline += len(action.content.encode())
            command = shlex.join(["nodeprov_write", action.path, action.content,
                                  format(action.mode, "o")])
        else:
            command = shlex.join(action.argv)
        lines.append(f"step {index}\n{command}\n")
    if then_read is not None:
        lines.append(f"step {len(batch)}\nset +e\n{{\n{read_script(then_read)}}} </dev/null\n")
    return "".join(lines)


def failed_step(stderr: str, token: str) -> tuple[int | None, str]:
    """The step that failed (None: before any) and what it printed on stderr."""
    marker = f"\n@@{token} step "
    if marker not in stderr:
        return None, stderr
    last = stderr.rsplit(marker, 1)[1]
    number, _, output = last.partition("\n")
    return int(number), output


def _batchable(action: Action) -> bool:
    return isinstance(action, Run | Write)
