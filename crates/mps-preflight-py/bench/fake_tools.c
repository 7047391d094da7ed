/* The fake host's tools, compiled (bench/bench_probe.py and `cargo xtask bench` build them with
 * `cc`): a shell script would cost a shell start per query and drown what is measured. One
 * program, named by argv[0]:
 *   nvidia-smi               one H100 in Exclusive_Process: the health columns when asked for
 *                            them, schema v2's six columns when asked for `name`, else index,uuid
 *                            (the reference module's query); nothing for `--query-compute-apps`
 *                            (no compute process holds the GPU, as on an idle host);
 *   nvidia-cuda-mps-control  reads its commands to end of file, then answers each as an idle
 *                            550 daemon serving server 4428 does: `100.0` for the thread
 *                            percentages, `4428` for the server list, `ACTIVE` for its status,
 *                            and nothing for its clients (none) or a pinned-memory limit that
 *                            is not set.
 * Built with -DFAKE_IDLE, the daemon serves no server (its server list is empty); with
 * -DFAKE_DEFAULT_MODE too, the GPU is in the Default compute mode. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#ifdef FAKE_DEFAULT_MODE
#define MODE "Default"
#else
#define MODE "Exclusive_Process"
#endif

static void answer(const char *command) {
    if (strcmp(command, "get_default_active_thread_percentage") == 0) {
        puts("100.0");
    } else if (strcmp(command, "get_server_list") == 0) {
#ifndef FAKE_IDLE
        puts("4428");
#endif
    } else if (strncmp(command, "get_server_status ", 18) == 0) {
        puts("ACTIVE");
    } else if (strncmp(command, "get_client_list ", 16) == 0) {
        /* a server without clients: the daemon prints nothing */
    } else if (strncmp(command, "get_active_thread_percentage ", 29) == 0) {
        puts("100.0");
    } else if (strncmp(command, "get_default_device_pinned_mem_limit ", 36) == 0
               || strncmp(command, "get_device_pinned_mem_limit ", 28) == 0) {
        /* no limit: the real 550 daemon prints nothing */
    } else {
        printf("Unknown command \"%s\"\n", command);
    }
}

int main(int argc, char **argv) {
    const char *name = strrchr(argv[0], '/');
    name = name ? name + 1 : argv[0];
    if (strcmp(name, "nvidia-smi") == 0) {
        if (argc > 1 && strncmp(argv[1], "--query-compute-apps=", 21) == 0) {
            return 0;
        }
        int health = argc > 1 && strstr(argv[1], "gpu_recovery_action") != NULL;
        int six = argc > 1 && strstr(argv[1], "name") != NULL;
        fputs(health ? MODE ", 550.163.01, Enabled, None, No, No, No, 0, GPU-8932f937-d72c-4106-c12f-20bd9faed9f6, NVIDIA H100 80GB HBM3, 00000000:18:00.0\n"
              : six  ? MODE ", 550.163.01, 0, GPU-8932f937-d72c-4106-c12f-20bd9faed9f6, NVIDIA H100 80GB HBM3, 00000000:18:00.0\n"
                     : "0, GPU-8932f937-d72c-4106-c12f-20bd9faed9f6\n",
              stdout);
        return 0;
    }
    char commands[4096];
    size_t length = 0;
    ssize_t got;
    while ((got = read(0, commands + length, sizeof commands - 1 - length)) > 0) {
        length += (size_t)got;
    }
    commands[length] = '\0';
    for (char *line = strtok(commands, "\n"); line != NULL; line = strtok(NULL, "\n")) {
        answer(line);
    }
    return 0;
}
