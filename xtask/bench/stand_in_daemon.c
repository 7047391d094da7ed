/* The stand-in control daemon of the bench's fake hosts. It does at start what a real
 * `nvidia-cuda-mps-control -d` does that the probe reads: it takes the POSIX write lock on
 * $CUDA_MPS_PIPE_DIRECTORY/control_lock and holds it for as long as it runs (the probe proves
 * the daemon from /proc/locks, and then scans no /proc), and writes the first two lines of
 * its log to $CUDA_MPS_LOG_DIRECTORY/control.log, with an empty server.log beside it, in the
 * real 550 daemon's format (fixtures/daemon-logs/real-550.control.log). Then it sleeps until
 * it is killed. The control socket is the bench's own listener; the answers are fake_tools.c's.
 *
 *   CUDA_MPS_PIPE_DIRECTORY=P CUDA_MPS_LOG_DIRECTORY=L nvidia-cuda-mps-control -d */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

int main(void) {
    const char *pipe = getenv("CUDA_MPS_PIPE_DIRECTORY");
    const char *log = getenv("CUDA_MPS_LOG_DIRECTORY");
    char path[PATH_MAX];
    if (!pipe || !log) return 2;
    snprintf(path, sizeof path, "%s/control_lock", pipe);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    struct flock lock = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
    if (fd < 0 || fcntl(fd, F_SETLK, &lock) != 0) return 1;

    snprintf(path, sizeof path, "%s/server.log", log);
    FILE *server = fopen(path, "w");
    if (!server) return 1;
    fclose(server);
    struct timeval now;
    gettimeofday(&now, NULL);
    char stamp[32];
    strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S", localtime(&now.tv_sec));
    int pid = (int)getpid(), millis = (int)(now.tv_usec / 1000);
    snprintf(path, sizeof path, "%s/control.log", log);
    FILE *control = fopen(path, "w");
    if (!control) return 1;
    fprintf(control, "[%s.%03d Control %5d] Starting control daemon using socket %s/control\n",
            stamp, millis, pid, pipe);
    fprintf(control, "[%s.%03d Control %5d] To connect CUDA applications to this daemon, set env CUDA_MPS_PIPE_DIRECTORY=%s\n",
            stamp, millis, pid, pipe);
    fclose(control);
    for (;;) pause();
}
