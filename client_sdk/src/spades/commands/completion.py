"""``spades completion bash|zsh|fish``: the shell code that completes ``spades`` (and the older
``spades-*`` names) on Tab: subcommands, verbs and flags, read from the commands' own argparse
parsers by argcomplete, so the completion never falls out of step with the commands.

    eval "$(spades completion bash)"     # in ~/.bashrc
    eval "$(spades completion zsh)"      # in ~/.zshrc
    spades completion fish | source      # in ~/.config/fish/config.fish
"""

from __future__ import annotations

import argparse

from argcomplete.shell_integration import shellcode

#: Every name this distribution installs a command under.
COMMAND_NAMES = (
    "spades",
    "spades-bot",
    "spades-record",
    "spades-watch",
    "spades-tables",
    "spades-admin",
    "spades-play",
)
SHELLS = ("bash", "zsh", "fish")


def _completion(arguments: argparse.Namespace) -> int:
    print(shellcode(COMMAND_NAMES, shell=arguments.shell), end="")
    return 0


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "completion",
        help="shell completion: print the code for bash, zsh or fish",
        description=__doc__.replace("``", "") if __doc__ else None,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("shell", choices=SHELLS)
    parser.set_defaults(run=_completion, command_parser=parser)
