/*
 * Kafka-protocol test broker for the tidings test suite: librdkafka's in-process mock cluster
 * (Debian's librdkafka-dev) run as a standalone process. test/support/kafka-broker.ts compiles
 * it on demand with `gcc -O2 -o <bin> mock-cluster.c -lrdkafka` and speaks to it over stdio.
 *
 * Usage: tidings-kafka-mock [--brokers N] [--topic name:partitions]... [--ports p1,p2,...]
 *                           [--spread-leaders] [--ignore-stdin]
 *
 * stdout, line 1: the bootstrap string "127.0.0.1:p1,127.0.0.1:p2,..." (brokers 1..N in order).
 * stdin: one command a line, each answered by one stdout line "ok ..." or "error ...":
 *   down <id|-1>   disconnect broker <id> (-1: all) and refuse new connections; data is kept
 *   up <id|-1>     accept connections again
 *   topic <name>:<partitions>   create a topic
 *   topic-error <name> <code>   answer Metadata for topic <name> (created if missing) with Kafka
 *                  error <code> (0 clears it): producers cannot find its partitions, other topics
 *                  are unaffected (librdkafka's mock applies it to Metadata requests only)
 * The process exits cleanly on SIGTERM, SIGINT or SIGHUP, and when stdin reaches EOF, so a
 * mock never outlives the test process that spawned it (its stdin pipe closes when that dies,
 * even by SIGKILL). --ignore-stdin is for running it by hand with stdin not a terminal.
 *
 * Two things librdkafka's mock does not do on its own, fixed here:
 *  - ControllerId: the mock answers Metadata with its cluster struct's `controller_id`, which
 *    nothing ever sets (0 in 2.0.2 and up to librdkafka's master), while brokers are numbered
 *    1..N. kafkajs looks the controller up by that id, so its idempotent producer
 *    (InitProducerId goes to the controller) and admin calls fail with "broker not found".
 *    The struct is private, but its first three members have been `char id[32]; rd_kafka_t *rk;
 *    int32_t controller_id;` from 1.9 through master; after checking two of them against what
 *    the public API reports, the launcher sets controller_id to broker 1. If the check fails
 *    (a future layout) it leaves it alone and says so on stderr.
 *  - Fixed ports: the mock binds port 0. --ports makes our bind() (which librdkafka's call
 *    resolves to, since the executable's symbol comes first) bind the given ports instead, so a
 *    restarted mock comes back on the addresses clients already know. The mock sets
 *    SO_REUSEADDR, so a port in TIME_WAIT is reusable at once.
 *
 * And one it does differently from Kafka, changed on request (--spread-leaders, for the bench):
 *  - Leaders: the mock gives each partition of a new topic a leader drawn at random
 *    (rd_jitter, i.e. libc's rand_r), so a 4-partition topic on 3 brokers is led by 1, 2 or 3 of
 *    them, and whatever measures it runs on a different layout each time. Kafka spreads a topic's
 *    leaders over the brokers round-robin. --spread-leaders makes our rand_r (which librdkafka's
 *    call resolves to, as with bind()) count up instead, so the partitions of a topic, drawn one
 *    after another, get consecutive brokers: 4 partitions on 3 brokers are led 2/1/1, as Kafka
 *    leads them. Without the flag rand_r is libc's.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#define MAX_BROKERS 64

static int pinned_ports[MAX_BROKERS];
static int pinned_cnt  = 0;
static int pinned_next = 0;

/* Interposes libc's bind() for librdkafka's listener sockets: an IPv4 bind to port 0 takes the
 * next --ports entry. Everything else passes through untouched. */
int bind(int fd, const struct sockaddr *addr, socklen_t len) {
        if (pinned_next < pinned_cnt && addr && addr->sa_family == AF_INET &&
            len >= (socklen_t)sizeof(struct sockaddr_in) &&
            ((const struct sockaddr_in *)addr)->sin_port == 0) {
                struct sockaddr_in sin = *(const struct sockaddr_in *)addr;
                sin.sin_port = htons((uint16_t)pinned_ports[pinned_next++]);
                return (int)syscall(SYS_bind, fd, (const struct sockaddr *)&sin,
                                    (socklen_t)sizeof(sin));
        }
        return (int)syscall(SYS_bind, fd, addr, len);
}

static int spread_leaders = 0;
static unsigned int spread_next = 0;

/* Interposes libc's rand_r() (see --spread-leaders above); without the flag, libc's own. */
int rand_r(unsigned int *seed) {
        static int (*libc_rand_r)(unsigned int *);
        if (spread_leaders)
                return (int)(__atomic_fetch_add(&spread_next, 1, __ATOMIC_RELAXED) & 0x7fffffff);
        if (!libc_rand_r)
                libc_rand_r = (int (*)(unsigned int *))dlsym(RTLD_NEXT, "rand_r");
        return libc_rand_r(seed);
}

/* The leading members of librdkafka's private struct rd_kafka_mock_cluster_s (see above). */
struct mock_cluster_head {
        char id[32];
        rd_kafka_t *rk;
        int32_t controller_id;
};

static void fix_controller_id(rd_kafka_mock_cluster_t *mc, rd_kafka_t *rk) {
        struct mock_cluster_head *head = (struct mock_cluster_head *)mc;
        if (strncmp(head->id, "mockCluster", 11) == 0 && head->rk == rk &&
            rd_kafka_mock_cluster_handle(mc) == rk && head->controller_id == 0) {
                /* The mock thread only reads this while answering Metadata; no client can
                 * have connected yet since the bootstrap string is not printed. */
                head->controller_id = 1;
        } else {
                fprintf(stderr,
                        "tidings-kafka-mock: librdkafka %s: mock cluster layout not "
                        "recognised, ControllerId left as the mock reports it (kafkajs "
                        "idempotent producer and admin calls will fail)\n",
                        rd_kafka_version_str());
        }
}

static int create_topic(rd_kafka_mock_cluster_t *mc, int brokers, const char *spec,
                        char *err, size_t errlen) {
        char name[256];
        const char *colon = strrchr(spec, ':');
        long parts        = 1;
        size_t n          = colon ? (size_t)(colon - spec) : strlen(spec);
        if (n == 0 || n >= sizeof(name)) {
                snprintf(err, errlen, "bad topic spec '%s' (want name:partitions)", spec);
                return -1;
        }
        memcpy(name, spec, n);
        name[n] = '\0';
        if (colon) {
                char *end;
                parts = strtol(colon + 1, &end, 10);
                if (*end != '\0' || parts < 1 || parts > 10000) {
                        snprintf(err, errlen, "bad partition count in '%s'", spec);
                        return -1;
                }
        }
        rd_kafka_resp_err_t e = rd_kafka_mock_topic_create(
            mc, name, (int)parts, brokers < 3 ? brokers : 3);
        if (e) {
                snprintf(err, errlen, "topic %s: %s", name, rd_kafka_err2str(e));
                return -1;
        }
        return 0;
}

static void usage(void) {
        fprintf(stderr,
                "usage: tidings-kafka-mock [--brokers N] [--topic name:partitions]... "
                "[--ports p1,p2,...] [--spread-leaders] [--ignore-stdin]\n");
        exit(2);
}

/* Runs one stdin command and answers it on stdout. */
static void command(rd_kafka_mock_cluster_t *mc, int brokers, char *line) {
        char err[512];
        int id;
        line[strcspn(line, "\r\n")] = '\0';
        if (line[0] == '\0')
                return;
        if (sscanf(line, "down %d", &id) == 1) {
                rd_kafka_resp_err_t e = rd_kafka_mock_broker_set_down(mc, id);
                if (e)
                        printf("error %s: %s\n", line, rd_kafka_err2str(e));
                else
                        printf("ok %s\n", line);
        } else if (sscanf(line, "up %d", &id) == 1) {
                rd_kafka_resp_err_t e = rd_kafka_mock_broker_set_up(mc, id);
                if (e)
                        printf("error %s: %s\n", line, rd_kafka_err2str(e));
                else
                        printf("ok %s\n", line);
        } else if (strncmp(line, "topic-error ", 12) == 0) {
                char name[256];
                int code;
                char extra;
                if (sscanf(line + 12, "%255s %d %c", name, &code, &extra) != 2 || code < 0 ||
                    code > 32767) {
                        printf("error bad topic-error command (want topic-error <name> <code>): %s\n",
                               line);
                } else {
                        rd_kafka_mock_topic_set_error(mc, name, (rd_kafka_resp_err_t)code);
                        printf("ok %s\n", line);
                }
        } else if (strncmp(line, "topic ", 6) == 0) {
                if (create_topic(mc, brokers, line + 6, err, sizeof(err)) == -1)
                        printf("error %s\n", err);
                else
                        printf("ok %s\n", line);
        } else {
                printf("error unknown command: %s\n", line);
        }
        fflush(stdout);
}

int main(int argc, char **argv) {
        int brokers      = 3;
        int ignore_stdin = 0;
        const char *topics[256];
        int topic_cnt = 0;
        char err[512];

        for (int i = 1; i < argc; i++) {
                if (!strcmp(argv[i], "--brokers") && i + 1 < argc) {
                        brokers = atoi(argv[++i]);
                        if (brokers < 1 || brokers > MAX_BROKERS)
                                usage();
                } else if (!strcmp(argv[i], "--topic") && i + 1 < argc) {
                        if (topic_cnt == 256)
                                usage();
                        topics[topic_cnt++] = argv[++i];
                } else if (!strcmp(argv[i], "--ports") && i + 1 < argc) {
                        char *s = argv[++i], *end;
                        while (*s) {
                                long p = strtol(s, &end, 10);
                                if (end == s || p < 1 || p > 65535 || pinned_cnt == MAX_BROKERS)
                                        usage();
                                pinned_ports[pinned_cnt++] = (int)p;
                                s = *end == ',' ? end + 1 : end;
                                if (*end && *end != ',')
                                        usage();
                        }
                } else if (!strcmp(argv[i], "--spread-leaders")) {
                        spread_leaders = 1;
                } else if (!strcmp(argv[i], "--ignore-stdin")) {
                        ignore_stdin = 1;
                } else {
                        usage();
                }
        }
        if (pinned_cnt && pinned_cnt != brokers) {
                fprintf(stderr, "tidings-kafka-mock: --ports needs exactly %d ports\n", brokers);
                return 2;
        }

        /* Blocked before librdkafka starts its threads, so they inherit the mask and the
         * signals arrive only through the signalfd below. */
        sigset_t sigs;
        sigemptyset(&sigs);
        sigaddset(&sigs, SIGTERM);
        sigaddset(&sigs, SIGINT);
        sigaddset(&sigs, SIGHUP);
        sigprocmask(SIG_BLOCK, &sigs, NULL);
        signal(SIGPIPE, SIG_IGN);
        /* Belt and braces beside the stdin EOF rule. */
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        int sfd = signalfd(-1, &sigs, SFD_CLOEXEC);
        if (sfd == -1) {
                perror("tidings-kafka-mock: signalfd");
                return 1;
        }

        rd_kafka_conf_t *conf = rd_kafka_conf_new();
        /* The handle only hosts the mock: no bootstrap servers, quiet logs. */
        rd_kafka_conf_set(conf, "log_level", "3", err, sizeof(err));
        rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
        if (!rk) {
                fprintf(stderr, "tidings-kafka-mock: rd_kafka_new: %s\n", err);
                return 1;
        }
        rd_kafka_mock_cluster_t *mc = rd_kafka_mock_cluster_new(rk, brokers);
        if (!mc) {
                fprintf(stderr, "tidings-kafka-mock: could not create the mock cluster%s\n",
                        pinned_cnt ? " (is a --ports port in use?)" : "");
                rd_kafka_destroy(rk);
                return 1;
        }
        fix_controller_id(mc, rk);
        for (int i = 0; i < topic_cnt; i++) {
                if (create_topic(mc, brokers, topics[i], err, sizeof(err)) == -1) {
                        fprintf(stderr, "tidings-kafka-mock: %s\n", err);
                        rd_kafka_mock_cluster_destroy(mc);
                        rd_kafka_destroy(rk);
                        return 2;
                }
        }

        printf("%s\n", rd_kafka_mock_cluster_bootstraps(mc));
        fflush(stdout);

        char buf[4096];
        size_t used = 0;
        int running = 1;
        while (running) {
                struct pollfd fds[2] = {{.fd = sfd, .events = POLLIN},
                                        {.fd = ignore_stdin ? -1 : 0, .events = POLLIN}};
                if (poll(fds, 2, -1) == -1) {
                        if (errno == EINTR)
                                continue;
                        perror("tidings-kafka-mock: poll");
                        break;
                }
                if (fds[0].revents & POLLIN)
                        break; /* SIGTERM / SIGINT / SIGHUP */
                if (fds[1].revents & (POLLIN | POLLHUP | POLLERR)) {
                        ssize_t r = read(0, buf + used, sizeof(buf) - 1 - used);
                        if (r <= 0) {
                                if (r == -1 && errno == EINTR)
                                        continue;
                                break; /* EOF: the spawning process is gone */
                        }
                        used += (size_t)r;
                        buf[used] = '\0';
                        char *nl;
                        while ((nl = strchr(buf, '\n'))) {
                                *nl = '\0';
                                command(mc, brokers, buf);
                                used -= (size_t)(nl + 1 - buf);
                                memmove(buf, nl + 1, used + 1);
                        }
                        if (used == sizeof(buf) - 1)
                                used = 0; /* an overlong line: drop it */
                }
        }

        rd_kafka_mock_cluster_destroy(mc);
        rd_kafka_destroy(rk);
        return 0;
}
