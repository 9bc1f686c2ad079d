# projector: keep every AI client's MCP config in step with your model.
# projector hook fish | source   in ~/.config/fish/config.fish. When nothing changed, this
# decides in the shell itself (builtins only: no process is started); otherwise it runs one
# `projector sync`. Each model has its own watch list (a shell with another PROJECTOR_CONFIG or
# XDG_CONFIG_HOME reads another one), so switching models in one shell never blinds another.
function _projector_hook --on-event fish_prompt
    set -l state $PROJECTOR_STATE
    if test -z "$state"
        set state (set -q XDG_STATE_HOME; and test -n "$XDG_STATE_HOME"; and echo $XDG_STATE_HOME; or echo $HOME/.local/state)/projector
    end
    set -l model $PROJECTOR_CONFIG
    if test -z "$model"
        set model (set -q XDG_CONFIG_HOME; and test -n "$XDG_CONFIG_HOME"; and echo $XDG_CONFIG_HOME; or echo $HOME/.config)/projector/projector.yaml
    end
    set -l folder $state/models/(string replace -r '^/' '' -- $model)
    set -l stamp $folder/stamp
    set -l watch $folder/watch
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
                case '^*'
                    if not test -e $file; and not test -L $file
                        set run 1; break
                    end
                case '-*'
                    if test -e $file; or test -L $file
                        set run 1; break
                    end
                case '%*'
                    set -l parts (string split \t -- $file)
                    if test $parts[1] -nt $stamp
                        for name in $parts[2..-1]
                            if test -e $parts[1]/$name; or test -L $parts[1]/$name
                                set run 1; break
                            end
                        end
                        test $run = 1; and break
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
