//===- Trace.cpp - Timers and the Chrome trace writer ---------------------===//
//
// Records what ran when (micro-batch regions, GEMMs, collectives, anything a
// tool marks) as Chrome trace "complete" events and writes them as a JSON
// object file that Perfetto and chrome://tracing load: one process per rank
// (pid = rank, named "rank N" by a metadata event), the calling threads on
// track 0 and the communication thread of the overlapped all-reduces
// (gaccrt_all_reduce_start), or the CUDA backend's communication stream, on
// track 1, named "communication".
// Events are kept in memory until the file is written; begin/end pairs live
// on a per-thread stack.
//
//===----------------------------------------------------------------------===//

#include "gaccrt/gaccrt.h"

#include "Internal.h"

#include "gacc/Runner/AtomicFile.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <time.h>
#include <vector>

using namespace gaccrt;

namespace {

struct Event {
  std::string name;
  std::string category;
  double tsUs;
  double durUs;
  std::string argsJson;
  int track = 0;
};

struct TraceState {
  std::mutex mutex;
  std::atomic<bool> enabled{false};
  std::string path;
  std::vector<Event> events;
};

TraceState &traceState() {
  static TraceState *state = new TraceState(); // never destroyed
  return *state;
}

/// An event opened by gaccrt_trace_begin. `recorded` is false when tracing
/// was off at the begin; such entries only keep the pairs balanced.
struct OpenEvent {
  std::string name;
  std::string category;
  double startUs;
  bool recorded;
};

thread_local std::vector<OpenEvent> openEvents;

/// setThreadTraceTrack's track.
thread_local int threadTrack = 0;

void warn(const std::string &message) {
  std::fprintf(stderr, "gaccrt: warning: %s\n", message.c_str());
}

void appendJsonString(std::string &out, const std::string &text) {
  out += '"';
  for (char c : text) {
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\t':
      out += "\\t";
      break;
    default:
      if (static_cast<unsigned char>(c) < 0x20) {
        char escaped[8];
        std::snprintf(escaped, sizeof(escaped), "\\u%04x",
                      static_cast<unsigned>(static_cast<unsigned char>(c)));
        out += escaped;
      } else {
        out += c;
      }
    }
  }
  out += '"';
}

void appendJsonNumber(std::string &out, double value) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.3f", std::isfinite(value) ? value : 0.0);
  out += text;
}

/// `path` with ".rank<r>" inserted before the extension of the file name
/// when several ranks write traces.
std::string tracePathForRank(const std::string &path, int rank, int worldSize) {
  if (worldSize <= 1)
    return path;
  std::string suffix = ".rank" + std::to_string(rank);
  size_t nameStart = path.find_last_of('/');
  nameStart = nameStart == std::string::npos ? 0 : nameStart + 1;
  size_t dot = path.find_last_of('.');
  // No extension, or a dot that starts a hidden file's name.
  if (dot == std::string::npos || dot <= nameStart)
    return path + suffix;
  return path.substr(0, dot) + suffix + path.substr(dot);
}

void record(std::string name, std::string category, double tsUs, double durUs,
            std::string argsJson, int track = 0) {
  TraceState &state = traceState();
  std::lock_guard<std::mutex> lock(state.mutex);
  if (!state.enabled.load(std::memory_order_relaxed))
    return;
  state.events.push_back({std::move(name), std::move(category), tsUs, durUs,
                          std::move(argsJson),
                          track == 0 ? threadTrack : track});
}

} // namespace

void gaccrt::setThreadTraceTrack(int track) { threadTrack = track; }

bool gaccrt::traceEnabled() {
  return traceState().enabled.load(std::memory_order_relaxed);
}

void gaccrt::traceComplete(const std::string &name, const char *category,
                           double tsUs, double durUs,
                           const std::string &argsJson, int track) {
  if (traceEnabled())
    record(name, category, tsUs, durUs, argsJson, track);
}

double gaccrt_now_us(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<double>(now.tv_sec) * 1e6 +
         static_cast<double>(now.tv_nsec) * 1e-3;
}

void gaccrt_trace_enable(const char *path) {
  TraceState &state = traceState();
  std::lock_guard<std::mutex> lock(state.mutex);
  if (!path || !*path) {
    state.enabled = false;
    state.path.clear();
    state.events.clear();
    return;
  }
  state.path = path;
  state.enabled = true;
}

int gaccrt_trace_enabled(void) { return traceEnabled() ? 1 : 0; }

void gaccrt_trace_begin(const char *name, const char *category) {
  if (!traceEnabled()) {
    openEvents.push_back({std::string(), std::string(), 0.0, false});
    return;
  }
  openEvents.push_back(
      {name ? name : "", category ? category : "", gaccrt_now_us(), true});
}

void gaccrt_trace_end(void) {
  double end = gaccrt_now_us();
  if (openEvents.empty()) {
    warn("gaccrt_trace_end without a matching gaccrt_trace_begin");
    return;
  }
  OpenEvent event = std::move(openEvents.back());
  openEvents.pop_back();
  if (event.recorded)
    record(std::move(event.name), std::move(event.category), event.startUs,
           end - event.startUs, std::string());
}

void gaccrt_trace_complete(const char *name, const char *category, double ts_us,
                           double dur_us, const char *args_json) {
  if (traceEnabled())
    record(name ? name : "", category ? category : "", ts_us, dur_us,
           args_json ? args_json : "");
}

void gaccrt_internal_trace_complete_on_track(const char *name,
                                             const char *category, double ts_us,
                                             double dur_us,
                                             const char *args_json,
                                             int32_t track) {
  if (traceEnabled())
    record(name ? name : "", category ? category : "", ts_us, dur_us,
           args_json ? args_json : "", track < 0 ? 0 : track);
}

void gaccrt_trace_region_begin(int64_t index) {
  if (!traceEnabled()) {
    gaccrt_trace_begin(nullptr, nullptr);
    return;
  }
  std::string name = "micro-batch " + std::to_string(index);
  gaccrt_trace_begin(name.c_str(), "region");
}

void gaccrt_trace_region_end(int64_t index) {
  if (!openEvents.empty() && openEvents.back().recorded &&
      openEvents.back().name != "micro-batch " + std::to_string(index))
    warn("gaccrt_trace_region_end(" + std::to_string(index) + ") closes '" +
         openEvents.back().name + "'");
  gaccrt_trace_end();
}

int gaccrt_trace_write(void) {
  TraceState &state = traceState();
  std::lock_guard<std::mutex> lock(state.mutex);
  if (!state.enabled.load(std::memory_order_relaxed))
    return 1;
  int rank = currentRankOrZero();
  std::string path =
      tracePathForRank(state.path, rank, currentWorldSizeOrOne());

  std::vector<const Event *> sorted;
  sorted.reserve(state.events.size());
  for (const Event &event : state.events)
    sorted.push_back(&event);
  // By start time, enclosing events first, so the file reads top-down.
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const Event *a, const Event *b) {
                     if (a->tsUs != b->tsUs)
                       return a->tsUs < b->tsUs;
                     return a->durUs > b->durUs;
                   });

  std::string pid = std::to_string(rank);
  std::string out = "{\"traceEvents\":[\n";
  out += "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":" + pid +
         ",\"tid\":0,\"args\":{\"name\":\"rank " + pid + "\"}}";
  std::set<int> tracks;
  for (const Event &event : state.events)
    tracks.insert(event.track);
  for (int track : tracks)
    if (track != 0)
      out += ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":" + pid +
             ",\"tid\":" + std::to_string(track) + ",\"args\":{\"name\":\"" +
             (track == 1
                  ? std::string("communication")
                  : "copy " + std::to_string(track - kCopiesTraceTrack + 2)) +
             "\"}}";
  for (const Event *event : sorted) {
    out += ",\n{\"name\":";
    appendJsonString(out, event->name);
    out += ",\"cat\":";
    appendJsonString(out, event->category);
    out += ",\"ph\":\"X\",\"ts\":";
    appendJsonNumber(out, event->tsUs);
    out += ",\"dur\":";
    appendJsonNumber(out, event->durUs);
    out += ",\"pid\":" + pid + ",\"tid\":" + std::to_string(event->track);
    if (!event->argsJson.empty())
      out += ",\"args\":" + event->argsJson;
    out += '}';
  }
  out += "\n],\"displayTimeUnit\":\"ms\"}\n";

  // All or nothing: a failed write leaves a previous trace untouched.
  std::string error;
  if (!mlir::gacc::writeFileAtomically(path, out, error)) {
    // error is "<path>: <why>".
    printError("cannot write the trace file '" + path +
               "': " + error.substr(std::min(error.size(), path.size() + 2)));
    return 1;
  }
  return 0;
}
