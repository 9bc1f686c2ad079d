# projector: keep every AI client's MCP config in step with your model.
# eval "$(projector hook bash)" in ~/.bashrc. When nothing changed, this decides in the shell
# itself (builtins only: no process is started); otherwise it runs one `projector sync`.
_projector_hook() {
  local state="${XDG_STATE_HOME:-$HOME/.local/state}/projector"
  local stamp="$state/hook-stamp" watch="$state/hook-watch" bin line file name run=
  hash projector 2>/dev/null || return 0
  bin="${BASH_CMDS[projector]}"
  if [[ ! -e $stamp || ! -e $watch ]]; then
    run=1
  else
    while IFS= read -r line; do
      file="${line:1}"
      case "$line" in
        +*) [[ -e $file && ! $file -nt $stamp ]] || { run=1; break; } ;;
        -*) [[ -e $file ]] && { run=1; break; } ;;
        @*) [[ $file == "$bin" ]] || { run=1; break; } ;;
        '='*) name="${file%%=*}"; [[ -n ${!name+x} && ${!name} == "${file#*=}" ]] || { run=1; break; } ;;
        '!'*) [[ -n ${!file+x} ]] && { run=1; break; } ;;
      esac
    done < "$watch"
  fi
  [[ -n $run ]] && "$bin" sync --quiet --hook
  return 0
}
if [[ ";${PROMPT_COMMAND[*]};" != *";_projector_hook;"* ]]; then
  PROMPT_COMMAND="_projector_hook${PROMPT_COMMAND:+;$PROMPT_COMMAND}"
fi
