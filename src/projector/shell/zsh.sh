# projector: keep every AI client's MCP config in step with your model.
# eval "$(projector hook zsh)" in ~/.zshrc. When nothing changed, this decides in the shell
# itself (builtins only: no process is started); otherwise it runs one `projector sync`.
_projector_hook() {
  emulate -L zsh
  local state="${XDG_STATE_HOME:-$HOME/.local/state}/projector"
  local stamp="$state/hook-stamp" watch="$state/hook-watch" bin="${commands[projector]}" line file name run=
  [[ -n $bin ]] || return 0
  if [[ ! -e $stamp || ! -e $watch ]]; then
    run=1
  else
    while IFS= read -r line; do
      file="${line[2,-1]}"
      case "$line" in
        +*) [[ -e $file && ! $file -nt $stamp ]] || { run=1; break; } ;;
        -*) [[ -e $file ]] && { run=1; break; } ;;
        @*) [[ $file == "$bin" ]] || { run=1; break; } ;;
        '='*) name="${file%%=*}"; [[ -v $name && ${(P)name} == "${file#*=}" ]] || { run=1; break; } ;;
        '!'*) [[ -v $file ]] && { run=1; break; } ;;
      esac
    done < "$watch"
  fi
  [[ -n $run ]] && "$bin" sync --quiet --hook
  return 0
}
autoload -Uz add-zsh-hook
add-zsh-hook precmd _projector_hook
