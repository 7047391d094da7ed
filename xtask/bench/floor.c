/* The floor of a probe: the host queries `probe` makes, run by a tiny C program one
 * after the other, each with its stdin written and its output read to end of file, then reaped.
 * `cargo xtask bench` builds it with `cc -O2` and runs it as a whole process, as it runs probe.
 *
 *   floor NVIDIA_SMI MPS_CONTROL FIRST_STDIN [SETTINGS_STDIN] [--compute-apps]
 *
 * The GPU query, then the daemon's first session (FIRST_STDIN, what the probe sends: read from
 * its `capture`); then, where the probe asks them, the settings session (SETTINGS_STDIN) and
 * `nvidia-smi --query-compute-apps`. */
#include <spawn.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static int run(const char *path, char **argv, const char *input) {
    int out[2], in[2];
    if (pipe(out) != 0 || pipe(in) != 0) return 1;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in[0], 0);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    posix_spawn_file_actions_addclose(&actions, in[1]);
    posix_spawn_file_actions_addclose(&actions, out[0]);
    pid_t pid;
    if (posix_spawn(&pid, path, &actions, NULL, argv, environ) != 0) return 1;
    close(in[0]);
    close(out[1]);
    if (write(in[1], input, strlen(input)) < 0) return 1;
    close(in[1]);
    char buffer[4096];
    while (read(out[0], buffer, sizeof buffer) > 0) {
    }
    close(out[0]);
    int status;
    if (waitpid(pid, &status, 0) != pid) return 1;
    return !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

int main(int argc, char **argv) {
    if (argc < 4) return 2;
    char *smi[] = {"nvidia-smi", "--query-gpu=compute_mode,driver_version,persistence_mode,gpu_recovery_action,retired_pages.pending,remapped_rows.pending,remapped_rows.failure,index,uuid,name,pci.bus_id",
                   "--format=csv,noheader", NULL};
    char *apps[] = {"nvidia-smi", "--query-compute-apps=gpu_uuid,pid,process_name", "--format=csv,noheader", NULL};
    char *control[] = {"nvidia-cuda-mps-control", NULL};
    int failed = run(argv[1], smi, "");
    failed |= run(argv[2], control, argv[3]);
    for (int i = 4; i < argc; i++) {
        failed |= strcmp(argv[i], "--compute-apps") == 0 ? run(argv[1], apps, "") : run(argv[2], control, argv[i]);
    }
    return failed;
}
