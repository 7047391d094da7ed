//! [`Code::why`] of the checks beyond the control pipe: `/dev/shm`, the capacity codes and
//! whether the judged user's server can reach the pipe directory.

use super::Code;

impl Code {
    /// [`Code::why`] of what the clients share with the server beyond the control pipe
    /// (`/dev/shm`) and of the capacity advisories.
    pub(super) fn shared_why(self) -> &'static str {
        match self {
            Self::ShmNotShared => {
                "A client and its MPS server exchange memory through /dev/shm; a client whose /dev/shm is not the server's fails at CUDA init (error 805, a segfault in cudaSetDevice, or SIGBUS)."
            }
            Self::ShmUnverified => {
                "Only the daemon's /proc/<pid>/root shows which /dev/shm its servers use, and only statvfs shows the room left; without them a client that fails at CUDA init is not ruled out."
            }
            Self::ShmBelowRequirement => {
                "Each client maps shared memory in /dev/shm; a full or small /dev/shm kills clients with SIGBUS or fails their CUDA init."
            }
            Self::DeviceMaxConnectionsHigh => {
                "Under MPS each client's CUDA_DEVICE_MAX_CONNECTIONS work queues come out of the server's shared pool; above 2 fewer clients fit (NVIDIA recommends 2 or fewer)."
            }
            Self::DaemonOpenFilesLow => {
                "The daemon and its servers hold file descriptors per client; NVIDIA recommends an open-files limit of at least 16384 for the control daemon."
            }
            Self::GpuHeldByComputeProcess => {
                "In Exclusive_Process mode exclusivity applies to the MPS server: while another compute process holds the GPU the daemon cannot start a server, and every client fails with \"all CUDA-capable devices are busy or unavailable\"."
            }
            Self::ComputeAppsUnverified => {
                "Only nvidia-smi's compute-apps list shows that no other process holds a GPU in Exclusive_Process before the MPS server starts; without it a server that cannot start is not ruled out."
            }
            Self::ServerClientLimitReached => {
                "An MPS server takes at most 48 client CUDA contexts per device on Volta and newer (fewer on a MIG instance); a client beyond the limit fails at context creation."
            }
            Self::PipeDirectoryUnreachable => {
                "The MPS server runs as the client's user and must search every directory above the pipe and log directories, write <pipe>/log and connect to <pipe>/control; where it cannot, the server crash-loops with EACCES while the daemon still answers queries."
            }
            Self::PipeAccessUnverified => {
                "Only the modes, owners and groups on the way to the pipe directory show that the client's server can reach it; an ACL, a symbolic link, SELinux or an unread fact leaves a server that crash-loops with EACCES not ruled out."
            }
            _ => "",
        }
    }
}
