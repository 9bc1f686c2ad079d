# projector: keep every AI client's MCP config in step with your model.
# eval "$(projector hook zsh)" in ~/.zshrc. When nothing changed, this decides in the shell
# itself (builtins only: no process is started); otherwise it runs one `projector sync`.
# Each model has its own watch list (a shell with another PROJECTOR_CONFIG or XDG_CONFIG_HOME
# reads another one), so switching models in one shell never blinds another.
_projector_hook() {
  emulate -L zsh
  local state="${PROJECTOR_STATE:-${XDG_STATE_HOME:-$HOME/.local/state}/projector}"
  local model="${PROJECTOR_CONFIG:-${XDG_CONFIG_HOME:-$HOME/.config}/projector/projector.yaml}"
  local folder="$state/models/${model#/}"
  local stamp="$folder/stamp" watch="$folder/watch" bin="${commands[projector]}" line names file name run=
  [[ -n $bin ]] || return 0
  if [[ ! -e $stamp || ! -e $watch ]]; then
    run=1
  else
    while IFS=$'\t' read -r line names; do
      file="${line[2,-1]}"
      case "$line" in
        +*) [[ -e $file && ! $file -nt $stamp ]] || { run=1; break; } ;;
        '^'*) [[ -e $file || -L $file ]] || { run=1; break; } ;;
        -*) [[ -e $file || -L $file ]] && { run=1; break; } ;;
        %*) if [[ $file -nt $stamp ]]; then
              for name in "${(@ps:\t:)names}"; do
                [[ -e $file/$name || -L $file/$name ]] && { run=1; break 2; }
              done
            fi ;;
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
