// fleet-floor: the floor of the fleet benchmark (scripts/bench-fleet.py, BENCHMARKS.md).
//
// The least a publisher can do with libmosquitto: the same TPV and SKY payloads serialgps
// publishes (precomputed, `serialgps decode --json FIXTURE`), for N receivers, all at the same
// instants at RATE Hz, retained with a message expiry and QoS 0 as the bridge publishes them,
// and nothing else: no serial port, no driver, no encoding. What the broker and the consumer
// then deliver is the best any publisher can hope for on this machine.
//
//   fleet-floor --broker-port P --receivers N --rate HZ --seconds S --payloads FILE
//               --stamps FILE [--connections N|1]
//
// `--connections N` (the default): one connection per receiver, as the bridge has (each its
// own Last Will); `1`: every receiver's messages through one connection. Each client is
// libmosquitto's own, without its thread: mosquitto_publish_v5 writes at once from the caller,
// and one poll(2) over every socket between the ticks looks after the rest (keep-alive, what
// did not fit in a socket). For each tick and receiver, the tick's instant (CLOCK_REALTIME,
// before the first publication) is written to the stamps file as `rI HH:MM:SS.mmm NS`, as
// fleet-bench writes its epochs' completion. Prints `ready` once connected.
//
// Built by scripts/bench-fleet.py: cc -O2 -o fleet-floor fleet-floor.c -lmosquitto

#include <errno.h>
#include <mosquitto.h>
#include <mqtt_protocol.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct payload {
  char *tpv, *sky;
  int tpv_length, sky_length;
  char key[13];  // HH:MM:SS.mmm of the TPV's time
};

static int64_t realtime_ns(void) {
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

static int64_t monotonic_ns(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

static void on_connect(struct mosquitto *client, void *context, int code) {
  (void)client;
  if (code == 0) *(bool *)context = true;
}

static void fail(const char *what) {
  fprintf(stderr, "fleet-floor: %s\n", what);
  exit(2);
}

// TPV and SKY lines in turn, as `serialgps decode --json` prints them.
static int load_payloads(const char *path, struct payload **result) {
  FILE *file = fopen(path, "r");
  if (!file) fail("cannot read the payloads");
  struct payload *payloads = NULL;
  int count = 0, capacity = 0;
  char *line = NULL;
  size_t size = 0;
  ssize_t length;
  while ((length = getline(&line, &size, file)) > 0) {
    while (length > 0 && (line[length - 1] == '\n' || line[length - 1] == '\r')) length--;
    line[length] = 0;
    if (strstr(line, "\"class\":\"TPV\"")) {
      const char *time = strstr(line, "\"time\":\"");
      if (!time || strlen(time) < 8 + 24) continue;
      if (count == capacity) {
        capacity = capacity ? 2 * capacity : 64;
        payloads = realloc(payloads, capacity * sizeof *payloads);
      }
      struct payload *entry = &payloads[count++];
      memset(entry, 0, sizeof *entry);
      entry->tpv = strdup(line);
      entry->tpv_length = (int)length;
      memcpy(entry->key, time + 8 + 11, 12);  // "2025-09-15T" then HH:MM:SS.mmm
    } else if (strstr(line, "\"class\":\"SKY\"") && count > 0 && !payloads[count - 1].sky) {
      payloads[count - 1].sky = strdup(line);
      payloads[count - 1].sky_length = (int)length;
    }
  }
  free(line);
  fclose(file);
  *result = payloads;
  return count;
}

int main(int argc, char **argv) {
  int port = 1883, receivers = 200, rate = 10, seconds = 20, connections = -1;
  const char *payload_path = NULL, *stamps_path = NULL;
  for (int index = 1; index + 1 < argc; index += 2) {
    const char *option = argv[index], *value = argv[index + 1];
    if (!strcmp(option, "--broker-port")) port = atoi(value);
    else if (!strcmp(option, "--receivers")) receivers = atoi(value);
    else if (!strcmp(option, "--rate")) rate = atoi(value);
    else if (!strcmp(option, "--seconds")) seconds = atoi(value);
    else if (!strcmp(option, "--payloads")) payload_path = value;
    else if (!strcmp(option, "--stamps")) stamps_path = value;
    else if (!strcmp(option, "--connections")) connections = atoi(value);
    else fail("usage: fleet-floor --broker-port P --receivers N --rate HZ --seconds S "
              "--payloads FILE --stamps FILE [--connections N|1]");
  }
  if (!payload_path || !stamps_path || receivers < 1 || rate < 1) fail("missing arguments");
  if (connections != 1) connections = receivers;

  struct payload *payloads;
  int payload_count = load_payloads(payload_path, &payloads);
  if (payload_count == 0) fail("no TPV in the payloads");

  mosquitto_lib_init();
  struct mosquitto **clients = calloc(connections, sizeof *clients);
  bool *connected = calloc(connections, sizeof *connected);
  for (int index = 0; index < connections; index++) {
    char id[64];
    snprintf(id, sizeof id, "fleet-floor-%d-%d", (int)getpid(), index);
    clients[index] = mosquitto_new(id, true, &connected[index]);
    if (!clients[index]) fail("mosquitto_new");
    mosquitto_int_option(clients[index], MOSQ_OPT_PROTOCOL_VERSION, MQTT_PROTOCOL_V5);
    mosquitto_connect_callback_set(clients[index], on_connect);
    if (mosquitto_connect(clients[index], "127.0.0.1", port, 60) != MOSQ_ERR_SUCCESS)
      fail("cannot connect");
  }
  // Every CONNACK in before the first publication.
  for (int index = 0; index < connections; index++) {
    for (int round = 0; round < 100 && !connected[index]; round++)
      mosquitto_loop(clients[index], 100, 1);
    if (!connected[index]) fail("the broker did not accept every connection");
  }

  mosquitto_property *expiry = NULL;
  mosquitto_property_add_int32(&expiry, MQTT_PROP_MESSAGE_EXPIRY_INTERVAL, 10);
  char (*tpv_topics)[48] = calloc(receivers, sizeof *tpv_topics);
  char (*sky_topics)[48] = calloc(receivers, sizeof *sky_topics);
  for (int index = 0; index < receivers; index++) {
    snprintf(tpv_topics[index], sizeof tpv_topics[index], "serialgps/r%d/tpv", index);
    snprintf(sky_topics[index], sizeof sky_topics[index], "serialgps/r%d/sky", index);
  }
  int ticks = seconds * rate;
  int64_t *stamps = calloc(ticks, sizeof *stamps);
  struct pollfd *descriptors = calloc(connections, sizeof *descriptors);
  printf("ready\n");
  fflush(stdout);

  int64_t interval = 1000000000 / rate, start = monotonic_ns() + interval;
  long refused = 0;
  for (int tick = 0; tick < ticks; tick++) {
    int64_t due = start + tick * interval;
    // Between ticks: wait on every socket, for what the broker sends (PINGRESP) and for
    // room to write what did not fit.
    for (;;) {
      int64_t left = due - monotonic_ns();
      if (left <= 0) break;
      for (int index = 0; index < connections; index++) {
        descriptors[index].fd = mosquitto_socket(clients[index]);
        descriptors[index].events = POLLIN | (mosquitto_want_write(clients[index]) ? POLLOUT : 0);
      }
      int timeout = (int)((left + 999999) / 1000000);
      if (poll(descriptors, connections, timeout) <= 0) continue;
      for (int index = 0; index < connections; index++) {
        if (descriptors[index].revents & POLLIN) mosquitto_loop_read(clients[index], 1);
        if (descriptors[index].revents & POLLOUT) mosquitto_loop_write(clients[index], 1);
      }
    }
    for (int index = 0; index < connections; index++) mosquitto_loop_misc(clients[index]);
    stamps[tick] = realtime_ns();
    const struct payload *payload = &payloads[tick % payload_count];
    for (int receiver = 0; receiver < receivers; receiver++) {
      struct mosquitto *client = clients[connections == 1 ? 0 : receiver];
      if (mosquitto_publish_v5(client, NULL, tpv_topics[receiver], payload->tpv_length,
                               payload->tpv, 0, true, expiry) != MOSQ_ERR_SUCCESS)
        refused++;
      if (payload->sky && mosquitto_publish_v5(client, NULL, sky_topics[receiver],
                                               payload->sky_length, payload->sky, 0, true,
                                               expiry) != MOSQ_ERR_SUCCESS)
        refused++;
    }
  }

  FILE *file = fopen(stamps_path, "w");
  if (!file) fail("cannot write the stamps");
  for (int tick = 0; tick < ticks; tick++)
    for (int receiver = 0; receiver < receivers; receiver++)
      fprintf(file, "r%d %s %lld\n", receiver, payloads[tick % payload_count].key,
              (long long)stamps[tick]);
  fclose(file);
  for (int index = 0; index < connections; index++) {
    mosquitto_disconnect(clients[index]);
    mosquitto_destroy(clients[index]);
  }
  mosquitto_property_free_all(&expiry);
  mosquitto_lib_cleanup();
  printf("published %d ticks, %ld publications refused\n", ticks, refused);
  return 0;
}
