# projector: keep every AI client's MCP config in step with your model.
# projector hook fish | source   in ~/.config/fish/config.fish. When nothing changed, this
# decides in the shell itself (builtins only: no process is started); otherwise it runs one
# `projector sync`.
function _projector_hook --on-event fish_prompt
    set -l state (set -q XDG_STATE_HOME; and echo $XDG_STATE_HOME; or echo $HOME/.local/state)/projector
    set -l stamp $state/hook-stamp
    set -l watch $state/hook-watch
    set -l bin (command -s projector); or return 0
    set -l run 0
    if not test -e $stamp; or not test -e $watch
        set run 1
    else
        while read -l line
            set -l file (string sub -s 2 -- $line)
            switch $line
                case '+*'
                    if not test -e $file; or test $file -nt $stamp
                        set run 1; break
                    end
                case '-*'
                    if test -e $file
                        set run 1; break
                    end
                case '@*'
                    if test "$file" != "$bin"
                        set run 1; break
                    end
                case '=*'
                    set -l pair (string split -m 1 = -- $file)
                    set -l name $pair[1]
                    if not set -q $name; or test "$$name" != "$pair[2]"
                        set run 1; break
                    end
                case '!*'
                    if set -q $file
                        set run 1; break
                    end
            end
        end < $watch
    end
    test $run = 1; and $bin sync --quiet --hook
    return 0
end
