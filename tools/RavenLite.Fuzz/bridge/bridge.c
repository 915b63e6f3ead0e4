// The bridge between libFuzzer and a SharpFuzz-instrumented .NET program (docs/reliability.md "Fuzzing"), built by
// tools/fuzz.sh with `clang -fsanitize=fuzzer`. libFuzzer runs in this process and mutates inputs; the .NET program
// runs as a child (its command line: the --child=ARG flags, in order, which libFuzzer itself ignores) and runs each
// input. They share one System V segment — SharpFuzz's 64 KiB edge map, then the input — and two pipes: the child
// says it is ready with a 4-byte 0 on the status pipe, then for each input this side writes the input's length on
// the control pipe and the child answers a 4-byte status (non-zero: the input failed). SharpFuzz.Fuzzer.LibFuzzer.Run
// finds the segment and the pipes through the __LIBFUZZER_* variables.
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/shm.h>
#include <unistd.h>

enum { EDGE_MAP_BYTES = 1 << 16, MAX_INPUT_BYTES = 1 << 20, MAX_CHILD_ARGS = 64 };

// libFuzzer reads coverage beyond its own instrumentation from this section.
__attribute__((used, section("__libfuzzer_extra_counters"))) static uint8_t edge_counters[EDGE_MAP_BYTES];

static uint8_t *shared;
static int edges_only; // FUZZ_EDGES_ONLY=1: report each edge as hit or not, without its hit count
static int control_fd = -1, status_fd = -1;

static void fail(const char *what)
{
    fprintf(stderr, "fuzz bridge: %s: %s\n", what, errno ? strerror(errno) : "unexpected");
    exit(1);
}

// Reads or writes exactly 4 bytes; 0 when the other side is gone.
static int transfer(int fd, int32_t *value, int writing)
{
    size_t done = 0;
    while (done < sizeof *value)
    {
        ssize_t n = writing ? write(fd, (char *)value + done, sizeof *value - done) : read(fd, (char *)value + done, sizeof *value - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return 0;
        done += (size_t)n;
    }
    return 1;
}

static void start_child(char **child)
{
    int control[2], status[2];
    if (pipe(control) || pipe(status))
        fail("pipe");
    int segment = shmget(IPC_PRIVATE, EDGE_MAP_BYTES + MAX_INPUT_BYTES, IPC_CREAT | IPC_EXCL | 0600);
    if (segment < 0)
        fail("shmget");
    shared = shmat(segment, NULL, 0);
    if (shared == (void *)-1)
        fail("shmat");
    pid_t pid = fork();
    if (pid < 0)
        fail("fork");
    if (pid == 0)
    {
        // The child must not outlive this process: libFuzzer leaves with _Exit on a timeout or a crash.
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        close(control[1]);
        close(status[0]);
        char value[32];
        snprintf(value, sizeof value, "%d", segment);
        setenv("__LIBFUZZER_SHM_ID", value, 1);
        snprintf(value, sizeof value, "%d", control[0]);
        setenv("__LIBFUZZER_CONTROL_PIPE_ID", value, 1);
        snprintf(value, sizeof value, "%d", status[1]);
        setenv("__LIBFUZZER_STATUS_PIPE_ID", value, 1);
        execvp(child[0], child);
        fail("exec");
    }
    close(control[0]);
    close(status[1]);
    control_fd = control[1];
    status_fd = status[0];
    int32_t ready;
    if (!transfer(status_fd, &ready, 0))
        fail("the child ended before it was ready");
    shmctl(segment, IPC_RMID, NULL); // both sides are attached: the segment goes when they detach
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    static char *child[MAX_CHILD_ARGS + 1];
    int count = 0;
    for (int i = 1; i < *argc; i++)
        if (strncmp((*argv)[i], "--child=", 8) == 0 && count < MAX_CHILD_ARGS)
            child[count++] = (*argv)[i] + 8;
    if (count == 0)
    {
        fprintf(stderr, "fuzz bridge: name the .NET program with --child=ARG flags (e.g. --child=dotnet --child=RavenLite.Fuzz.dll --child=rql)\n");
        exit(1);
    }
    const char *edges = getenv("FUZZ_EDGES_ONLY");
    edges_only = edges != NULL && strcmp(edges, "1") == 0;
    signal(SIGPIPE, SIG_IGN); // a dead child shows as a failed write, not a silent exit
    start_child(child);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > MAX_INPUT_BYTES)
        return 0; // run with -max_len no larger than this
    memset(shared, 0, EDGE_MAP_BYTES);
    memcpy(shared + EDGE_MAP_BYTES, data, size);
    int32_t length = (int32_t)size, status;
    if (!transfer(control_fd, &length, 1) || !transfer(status_fd, &status, 0))
    {
        fprintf(stderr, "fuzz bridge: the .NET child died on this input\n");
        abort();
    }
    if (edges_only)
        for (int i = 0; i < EDGE_MAP_BYTES; i++)
            edge_counters[i] = shared[i] != 0;
    else
        memcpy(edge_counters, shared, EDGE_MAP_BYTES);
    if (status != 0)
    {
        fprintf(stderr, "fuzz bridge: the input failed (the child printed why above)\n");
        abort();
    }
    return 0;
}
