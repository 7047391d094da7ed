/* The fake host's tools, compiled (bench/bench_probe.py builds them with `cc`): a shell script
 * would cost a shell start per query and drown what is measured. One program, named by argv[0]:
 *   nvidia-smi               one H100: schema v2's six columns when asked for `name`, else index,uuid
 *                            (the reference module's query);
 *   nvidia-cuda-mps-control  reads its commands to end of file, then answers as a daemon
 *                            serving server 4428 (`100.0` for the thread percentage). */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
    const char *name = strrchr(argv[0], '/');
    name = name ? name + 1 : argv[0];
    if (strcmp(name, "nvidia-smi") == 0) {
        int four = argc > 1 && strstr(argv[1], "name") != NULL;
        fputs(four ? "Exclusive_Process, 550.163.01, 0, GPU-8932f937-d72c-4106-c12f-20bd9faed9f6, NVIDIA H100 80GB HBM3, 00000000:18:00.0\n"
                   : "0, GPU-8932f937-d72c-4106-c12f-20bd9faed9f6\n",
              stdout);
        return 0;
    }
    char buffer[4096];
    while (read(0, buffer, sizeof buffer) > 0) {
    }
    fputs("100.0\n4428\n", stdout);
    return 0;
}
