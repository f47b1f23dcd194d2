# bash completion for browsercage(1)

_browsercage()
{
	local cur prev words cword
	_init_completion || return

	local cmds="run check explain lease release list template ps revoke gc doctor prepare version help"
	if ((cword == 1)); then
		COMPREPLY=($(compgen -W "$cmds --help --version" -- "$cur"))
		return
	fi
	local cmd=${words[1]}

	# Everything after -- belongs to the sandboxed command.
	local i
	for ((i = 2; i < cword; i++)); do
		if [[ ${words[i]} == -- ]]; then
			_command_offset $((i + 1))
			return
		fi
	done

	case $prev in
	--policy | --assignment | --audit)
		_filedir '@(ini|json|jsonl)'
		return
		;;
	--profile-dir | --profile-root | --ready-dir)
		_filedir -d
		return
		;;
	--profile | --task | --ttl | --pass-fd | --audit-fd | --cgroup-parent)
		return
		;;
	esac

	local opts
	case $cmd in
	run) opts="--policy --profile-dir --profile --profile-root --recover --task --ttl --audit
		--audit-fd --cgroup-parent --pass-fd --require-prepared --ready-dir --verbose --help --" ;;
	check | explain)
		opts="--help"
		[[ $cur != -* ]] && { _filedir ini; return; }
		;;
	doctor) opts="--policy --json --cgroup-parent --help" ;;
	prepare) opts="--policy --profile --assignment --profile-root --ready-dir --cgroup-parent --help" ;;
	lease) opts="--task --persistent --ephemeral --profile-root --policy --help" ;;
	release) opts="--task --delete --profile-root --policy --help" ;;
	template) opts="save list rm --expires --expires-at --audit --json --profile-root --policy --help" ;;
	ps) opts="--json --help" ;;
	list | revoke | gc) opts="--help" ;;
	*) return ;;
	esac
	COMPREPLY=($(compgen -W "$opts" -- "$cur"))
}
complete -F _browsercage browsercage
