"""Options given to a command group before its subcommand (`mcp-center approvals --data-dir D
approve ID`, `mcp-center gateway --url U token create T`): they apply to the subcommand that runs,
never silently dropped (R-7.3, R-9.2, trial35).

click keeps each level's options in that level's context, so a group's `--data-dir` used to stay
with the group while the subcommand opened the default data directory. `inherited_options` is run
on every command's context just after click parsed it (`_shared._parsed`): an option that an
enclosing group was given on the command line and this command has too (same parameter name) takes
the group's value, and the two levels' values must agree when both were given. A group option that
the command which runs does not have is refused rather than ignored (`approvals --all approve ID`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mcp_center.errors import CenterError, OptionUnknown, OptionValueInvalid

__all__ = ["inherited_options"]


def _given_on_the_line(ctx: Any) -> dict[str, Any]:
    """The parameters of context `ctx` the command line set (name -> the click parameter)."""
    from typer._click.core import ParameterSource

    return {
        param.name: param
        for param in ctx.command.get_params(ctx)
        if param.name and ctx.get_parameter_source(param.name) is ParameterSource.COMMANDLINE
    }


def _same(given: object, inherited: object) -> bool:
    """Whether two values of one option agree: paths by where they lead (`data` and
    `/home/me/data` from /home/me are one directory), anything else by equality."""
    if isinstance(given, Path) and isinstance(inherited, Path):
        return given.expanduser().resolve() == inherited.expanduser().resolve()
    return given == inherited


def _option(param: Any) -> str:
    return max(param.opts, key=len) if param.opts else str(param.name)


def inherited_options(ctx: Any, *, leaf: bool) -> CenterError | None:
    """Give the command of context `ctx` (just parsed) the options its enclosing groups were given.

    For each option an enclosing group of `ctx` was given on the command line: when this command
    has a parameter of the same name, its value becomes the group's (marked as given on the command
    line, so a command further down inherits it in turn); when `leaf` (the command that runs, not a
    group) and neither it nor a group between has that parameter, the option is refused.

    Args:
        ctx: the click context of the command just parsed (its parent chain holds the groups).
        leaf: True for a command, False for a group (which passes options on to its subcommand).
    Returns:
        None, or the error to report (nothing ran):
        OPTION_VALUE_INVALID (`reason: conflict`) when the group and this command were both given the
        option with different values (paths compared resolved: relative and absolute agree; neither
        value is repeated: one may be a secret typed in the wrong place);
        OPTION_UNKNOWN when the command that runs has no such option (R-7.3).
    """
    from typer._click.core import ParameterSource

    if ctx.resilient_parsing:
        return None
    own = {param.name: param for param in ctx.command.get_params(ctx) if param.name}
    mine = _given_on_the_line(ctx)
    below: set[str] = set()  # the parameters of the groups between `group` and this command
    group = ctx.parent
    while group is not None:
        for name, param in _given_on_the_line(group).items():
            if name in own and getattr(own[name], "param_type_name", "") == "option":
                value = group.params.get(name)
                if name in mine and not _same(ctx.params.get(name), value):
                    option = _option(own[name])
                    return OptionValueInvalid(
                        f"option '{option}' was given to {group.command_path} and to {ctx.command_path} with "
                        f"different values; give it once (either place applies to {ctx.command_path})",
                        details={"option": option, "command": ctx.command_path, "reason": "conflict"},
                    )
                ctx.params[name] = value
                ctx.set_parameter_source(name, ParameterSource.COMMANDLINE)
                mine[name] = own[name]
            elif leaf and name not in own and name not in below and param.opts:
                option = _option(param)
                return OptionUnknown(
                    f"option '{option}' of {group.command_path} does not apply to {ctx.command_path}, which has "
                    f"no such option; see '{ctx.command_path} --help' for its options",
                    details={"option": option, "command": ctx.command_path, "did_you_mean": []},
                )
        below |= {p.name for p in group.command.get_params(group) if p.name}
        group = group.parent
    return None
