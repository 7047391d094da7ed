//! The control commands a probe may send. Only read-only commands exist in this type, so a
//! probe cannot express `quit`, `start_server`, `shutdown_server`, `terminate_client` or `set_*`.

/// A read-only `nvidia-cuda-mps-control` command (MPS v2 stdin protocol).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadOnlyCommand {
    /// Always answers on a live daemon (`100.0`); the liveness check (NVIDIA's device plugin uses it too).
    GetDefaultActiveThreadPercentage,
    /// One MPS server PID per line; empty on a healthy idle daemon.
    GetServerList,
    /// The default client priority (535+).
    GetDefaultClientPriority,
    /// Clients per device; free text.
    GetDeviceClientList,
}

impl ReadOnlyCommand {
    /// The command line as the daemon reads it (without the newline).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::GetDefaultActiveThreadPercentage => "get_default_active_thread_percentage",
            Self::GetServerList => "get_server_list",
            Self::GetDefaultClientPriority => "get_default_client_priority",
            Self::GetDeviceClientList => "get_device_client_list",
        }
    }

    /// Every command of this type.
    pub const ALL: [Self; 4] = [
        Self::GetDefaultActiveThreadPercentage,
        Self::GetServerList,
        Self::GetDefaultClientPriority,
        Self::GetDeviceClientList,
    ];
}

/// The daemon probe, in order: liveness first (one answer line), then the server list
/// (zero or more PID lines), so the validator can split the combined output unambiguously.
pub const DAEMON_PROBE: [ReadOnlyCommand; 2] = [
    ReadOnlyCommand::GetDefaultActiveThreadPercentage,
    ReadOnlyCommand::GetServerList,
];

/// The standard input of a probe: each command on its own line.
pub fn probe_stdin(commands: &[ReadOnlyCommand]) -> String {
    let mut stdin = String::new();
    for command in commands {
        stdin.push_str(command.as_str());
        stdin.push('\n');
    }
    stdin
}
