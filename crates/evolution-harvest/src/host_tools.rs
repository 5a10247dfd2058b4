//! The built-in tools of the agent hosts whose sessions `harvest` reads.
//!
//! A harvested session calls the host's own file, shell and planning tools far more often than
//! the tools an agent's skills are about. Those built-ins are the host's, not the user's: their
//! calls are kept in the trajectory, but nothing should assume they are worth judging one by one.

/// Claude Code's built-in tools.
pub const CLAUDE_CODE: &[&str] = &[
    "Agent",
    "AskUserQuestion",
    "Bash",
    "BashOutput",
    "CronCreate",
    "CronDelete",
    "CronList",
    "Edit",
    "EnterPlanMode",
    "EnterWorktree",
    "ExitPlanMode",
    "ExitWorktree",
    "Glob",
    "Grep",
    "KillBash",
    "KillShell",
    "LS",
    "ListMcpResourcesTool",
    "MultiEdit",
    "NotebookEdit",
    "NotebookRead",
    "Read",
    "ReadMcpResourceTool",
    "ScheduleWakeup",
    "SlashCommand",
    "Skill",
    "Task",
    "TaskCreate",
    "TaskGet",
    "TaskList",
    "TaskOutput",
    "TaskStop",
    "TaskUpdate",
    "TodoRead",
    "TodoWrite",
    "ToolSearch",
    "WebFetch",
    "WebSearch",
    "Write",
];

/// Codex's built-in tools.
pub const CODEX: &[&str] = &[
    "apply_patch",
    "exec_command",
    "list_mcp_resources",
    "local_shell",
    "read_mcp_resource",
    "shell",
    "update_plan",
    "view_image",
    "web_search",
    "write_stdin",
];

/// Whether `name` is a built-in tool of Claude Code or Codex (exact, case-sensitive: a user's
/// own tool called `read` is not Claude Code's `Read`).
#[must_use]
pub fn is_host_builtin(name: &str) -> bool {
    CLAUDE_CODE.contains(&name) || CODEX.contains(&name)
}

#[cfg(test)]
mod tests {
    use super::is_host_builtin;

    #[test]
    fn host_tools_are_known_and_user_tools_are_not() {
        assert!(is_host_builtin("Bash"));
        assert!(is_host_builtin("apply_patch"));
        // Asking the user and planning are the host's, not a skill's tools.
        assert!(is_host_builtin("AskUserQuestion"));
        assert!(is_host_builtin("EnterPlanMode"));
        assert!(!is_host_builtin("read"));
        assert!(!is_host_builtin("lookup_order"));
        assert!(!is_host_builtin("mcp__orders__lookup"));
    }
}
