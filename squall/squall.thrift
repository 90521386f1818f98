// Squall's one schema: the logical plan, packing plan, physical plan,
// execution state and the control messages that carry them.
// Stored in the state manager in Thrift's compact encoding; loaded by
// squall.idl with thriftpy2.  Config values are JSON texts so that their
// Python types survive a round trip.

namespace py squall

// ---------------------------------------------------------------- logical plan

enum ComponentKind {
  SPOUT = 1,
  BOLT = 2,
}

enum GroupingKind {
  SHUFFLE = 1,
  FIELDS = 2,
  ALL = 3,
  GLOBAL = 4,
  NONE = 5,
  DIRECT = 6,
  LOCAL_OR_SHUFFLE = 7,
  PARTIAL_KEY = 8,
  CUSTOM = 9,
}

struct StreamSchema {
  1: required string name,
  2: required list<string> fields,
  3: required bool direct = false,
}

struct CustomGrouping {
  // "module:QualName" of the grouping class, importable in every process.
  1: required string class_name,
  // JSON object of the instance's attributes, restored without calling __init__.
  2: required string state_json,
}

struct InputStream {
  1: required string component,
  2: required string stream,
  3: required GroupingKind grouping,
  4: required list<string> fields,
  5: optional CustomGrouping custom,
}

struct Resources {
  1: required double cpu,
  2: required i64 ram_mb,
  3: required i64 disk_mb,
}

struct Component {
  1: required string name,
  2: required ComponentKind kind,
  // "module:QualName" of the user's Spout or Bolt class.
  3: required string class_name,
  4: required i32 parallelism,
  5: required list<StreamSchema> outputs,
  6: required list<InputStream> inputs,
  // key -> JSON text of the value
  7: required map<string, string> config,
  // A bolt's class acks each tuple when process() returns (Bolt.auto_ack): at
  // least once, only such bolts are chained (squall/chaining.py).
  8: optional bool auto_ack,
  // a StatefulBolt or StatefulSpout (squall/stateful.py): its state is saved at every checkpoint
  9: optional bool stateful,
  // a StatefulSpout whose state is keyed by the units of its source (partitions, files): on a parallelism
  // change every task gets every key and keeps those it now owns, so its parallelism may change
  10: optional bool rescalable,
}

struct Topology {
  1: required string name,
  2: required list<Component> components,
  3: required map<string, string> config,
  // Absolute path of the topology file: its directory goes on sys.path in
  // every runtime process so that user classes import there too.
  4: optional string source_file,
  // --config-property values given at submit: above every other layer.
  5: required map<string, string> overrides,
  // the cluster layer (--config-path at submit, what differs from the site file): below the topology's
  // own config, kept apart so that an error about one of its values names it
  6: optional map<string, string> cluster_config,
}

// ---------------------------------------------------------------- packing plan

struct InstanceId {
  1: required string component,
  2: required i32 task_id,
  3: required i32 component_index,
}

struct InstancePlan {
  1: required InstanceId id,
  2: required Resources resources,
}

struct ContainerPlan {
  1: required i32 id,
  2: required list<InstancePlan> instances,
  // What the container asks for: its instances plus padding (task
  // granularity), or the fixed worker size (worker granularity).
  3: required Resources resources,
  4: required Resources padding,
}

struct PackingPlan {
  1: required string id,
  2: required list<ContainerPlan> containers,
  3: required string algorithm,
  4: required string granularity,
}

// ------------------------------------------------------ runtime and state

enum TopologyStatus {
  RUNNING = 1,
  PAUSED = 2,
}

// executionstate/<topology>: written at submit, read by every process.
struct ExecutionState {
  1: required string topology_name,
  2: required string run_id,
  // Folder of this run: logs/, metrics/, packing_plan.json.
  3: required string run_dir,
  4: required double submit_time,
  5: required string submitter,
  6: required TopologyStatus status,
  // Every connection into the topology's processes proves it knows this first.
  7: required string secret,
  8: required string cluster,
  // Python interpreter the executors run processes with.
  9: required string python,
  // topology.max.spout.pending set while running (the health manager's pending tuner); unset: the config's
  10: optional i32 max_spout_pending,
}

// tmasters/<topology> (ephemeral): where the topology master listens.
struct TMasterLocation {
  1: required string topology_name,
  2: required string host,
  3: required i32 control_port,
  4: required i32 pid,
  5: required string run_id,
}

// schedulers/<topology>: what the scheduler needs to find what it launched.
struct SchedulerLocation {
  1: required string topology_name,
  2: required string scheduler,
  3: required string host,
  // container id -> executor pid (local scheduler)
  4: required map<i32, i32> executor_pids,
  // YARN application id (YARN scheduler)
  5: optional string application_id,
  // pid of the process that restarts dead containers (local scheduler: the supervisor)
  6: optional i32 supervisor_pid,
  // set when a container died past its restart budget: which, and the end of its log
  7: optional string failure,
  // container id -> the Skein service whose containers claim it (YARN scheduler)
  8: optional map<i32, string> services,
}

// One process of a container as its executor sees it.
struct ProcessStatus {
  1: required string name,
  // 0 while it is not running (restarting, or given up on)
  2: required i32 pid,
  // restarts within the restart window
  3: required i32 restarts,
  // abnormal exits since the container started
  4: required i32 crashes,
  // exit status of its last exit, if it has exited
  5: optional i32 last_exit,
  // set when it died past its restart budget: the reason and the end of its log
  6: optional string failure,
  // path of its log file
  7: required string log_file,
  // an instance process: every task in it is initialized (runtime/readiness.py); unset for the others
  8: optional bool initialized,
}

// containers/<topology>/<id> (ephemeral): a live executor and its processes.
struct ContainerStatus {
  1: required i32 container,
  2: required string host,
  3: required i32 executor_pid,
  4: required double updated,
  5: required list<ProcessStatus> processes,
  // on YARN: the YARN container id (CONTAINER_ID) and Skein's (SKEIN_CONTAINER_ID, service_instance)
  6: optional string yarn_container,
  7: optional string skein_container,
  // host:port of the container's debug server (runtime/debug_server.py)
  8: optional string debug_address,
}

struct StMgrLocation {
  1: required i32 container,
  2: required string host,
  // where other stream managers connect
  3: required i32 data_port,
  4: required i32 pid,
}

struct InstanceLocation {
  1: required InstanceId id,
  2: required i32 container,
  3: required i32 pid,
}

// pplans/<topology>: written by the topology master once every stream
// manager has registered with all its instances, and again after changes.
struct PhysicalPlan {
  1: required string topology_name,
  2: required string packing_plan_id,
  3: required TopologyStatus status,
  4: required TMasterLocation tmaster,
  5: required list<StMgrLocation> stmgrs,
  6: required list<InstanceLocation> instances,
  // the execution state's max_spout_pending: every reliable spout task caps its trees at it (unset: its config's)
  7: optional i32 max_spout_pending,
  // the leader's count of the plans it published (a delta names the one it applies to)
  8: optional i64 version,
}

// tmaster -> a stream manager that has the plan `base_version`: the plan `version` as what changed
// (stream managers and instances added or changed, the containers and tasks gone; the rest whole).
struct PhysicalPlanDelta {
  1: required i64 base_version,
  2: required i64 version,
  3: required string packing_plan_id,
  4: required TopologyStatus status,
  5: required TMasterLocation tmaster,
  6: required list<StMgrLocation> stmgrs,
  7: required list<i32> stmgrs_removed,
  8: required list<InstanceLocation> instances,
  9: required list<i32> instances_removed,
  10: optional i32 max_spout_pending,
}

// ------------------------------------------------------ runtime control plane
// Frames and the handshake are described in docs/protocol.md.

enum Role {
  INSTANCE = 1,
  STMGR = 2,
  METRICSMGR = 3,
  TMASTER = 4,
  CLIENT = 5,
}

// The first frame a server sends on every connection.
struct Challenge {
  1: required string topology_name,
  2: required binary nonce,
}

// The first frame a client sends: proof = HMAC-SHA256(secret, nonce).
struct Hello {
  1: required string topology_name,
  2: required Role role,
  3: required binary proof,
  4: required i32 container,
  5: required i32 pid,
  6: optional i32 task_id,
  7: optional string component,
  // the wire protocol's version (runtime/protocol.py PROTOCOL_VERSION); another is refused
  8: optional i32 version,
  // an instance process running a chain (squall/chaining.py): every task it runs, task_id's first
  9: optional list<InstanceId> chain,
}

// stmgr -> tmaster, sent again whenever its set of local instances changes.
struct RegisterStMgr {
  1: required StMgrLocation stmgr,
  2: required list<InstanceLocation> instances,
  // the version of the physical plan it holds (unset: none, or one a delta could not be applied to)
  3: optional i64 plan_version,
}

struct RegisterResponse {
  1: required bool ok,
  2: optional string error,
}

struct Heartbeat {
  1: required double time,
}

// stmgr -> every other stmgr: start (on) or stop throttling local spouts.
struct Backpressure {
  1: required i32 container,
  2: required bool on,
}

// One row of docs/metrics.md as a process reports it; `user` is JSON text.
struct MetricsRow {
  1: required double ts,
  2: required double interval_secs,
  3: required string process,
  4: required string component,
  5: optional i32 task_id,
  6: required i64 emit_count,
  7: required i64 execute_count,
  8: required i64 ack_count,
  9: required i64 fail_count,
  10: optional double execute_latency_ms,
  11: optional double process_latency_ms,
  12: optional double complete_latency_ms,
  13: required i64 queue_depth,
  14: required double backpressure_ms,
  15: required string user,
  16: required i32 pid,
  17: required i32 container,
  // the process's psutil figures, set by its metrics manager before it forwards the row
  18: optional double cpu_percent,
  19: optional double rss_mb,
  // sent before, on a connection lost before the metrics manager confirmed it: it may be in the file
  // already, and is written only if it is not (runtime/metrics_sender.py)
  20: optional bool resent,
}

struct MetricsQuery {
  1: optional string component,
  // the last this many seconds (the topology master keeps an hour); unset: since start
  2: optional double window_secs,
  // also the per-component time series over the window (charts)
  3: optional bool series,
  // only these tasks' rows and those of tasks keeping errors (unset: every task's); components sum every task
  4: optional list<i32> task_ids,
}

// An exception raised in a task's user code (runtime/user_errors.py).
struct UserErrorReport {
  1: required double time,
  // where it was raised: process(), next_tuple(), a metric, or uncaught (the task exited)
  2: required string where,
  // "Type: message"
  3: required string error,
  // the innermost frames of its traceback
  4: required string traceback,
}

// Without window_secs: totals since start, rates over the last bucket, latencies weighted means.
// With window_secs: counts and rates over the window, and the fields 13-28 over it.
struct MetricsSummary {
  1: required string component,
  2: optional i32 task_id,
  3: required i64 emitted,
  4: required i64 executed,
  5: required i64 acked,
  6: required i64 failed,
  7: required double emit_rate,
  8: required double execute_rate,
  9: required double ack_rate,
  10: required double fail_rate,
  11: optional double execute_latency_ms,
  12: optional double process_latency_ms,
  // seconds of rows the figures cover (a task's buckets in the window)
  13: optional double window_secs,
  // p50/p99 of the buckets' mean latencies in the window, each bucket weighted by its tuples
  14: optional double execute_latency_p50_ms,
  15: optional double execute_latency_p99_ms,
  16: optional double process_latency_p50_ms,
  17: optional double process_latency_p99_ms,
  18: optional double complete_latency_ms,
  19: optional double complete_latency_p50_ms,
  20: optional double complete_latency_p99_ms,
  // busy fraction: time in process() (spouts: next_tuple() calls that emitted) over the time covered;
  // a component: its busiest task
  21: optional double capacity,
  // tuples waiting at the end of the last bucket (a component: summed), and the most in the window
  22: optional i64 queue_depth,
  23: optional i64 queue_depth_max,
  // ms throttled by backpressure in the window (a component: its most throttled task)
  24: optional double backpressure_ms,
  // mean cpu % of one core over the window, rss at its end (a component: summed over its tasks)
  25: optional double cpu_percent,
  26: optional double rss_mb,
  // the last errors raised in user code (newest last), and how many were raised since start
  27: optional list<UserErrorReport> errors,
  28: optional i64 error_count,
  // a reliable spout task's trees open at the end of its last bucket (a component: summed)
  29: optional i64 pending,
}

// One step of a component's time series: what its tasks reported in [ts, ts + secs).
struct MetricsPoint {
  1: required string component,
  2: required double ts,
  3: required double secs,
  4: required i64 emitted,
  5: required i64 executed,
  6: required i64 acked,
  7: required i64 failed,
  8: optional double execute_latency_ms,
  9: optional double process_latency_ms,
  10: optional double complete_latency_ms,
  11: required double backpressure_ms,
}

// A partition a source spout reads (a Kafka topic's partition, a file), as its task last reported it
// (squall.metrics.SourcePartitions; docs/connectors.md)
struct SourcePartition {
  1: required string component,
  2: required i32 task_id,
  3: required string partition,
  // records the source holds that the task has not read (Kafka: high watermark - position); unset: unknown
  4: optional i64 lag,
  5: required double records_per_sec,
  6: required double bytes_per_sec,
  // the end of the bucket it was reported in (wall time)
  7: required double ts,
}

struct MetricsResponse {
  1: required list<MetricsSummary> components,
  2: required list<MetricsSummary> tasks,
  3: optional list<MetricsPoint> series,
  4: optional CheckpointStats checkpoints,
  5: optional list<SourcePartition> sources,
}

// ------------------------------------------------------ checkpoints (docs/state.md)

enum CheckpointStep {
  // tmaster -> stream managers -> their spout tasks: save your state, then send markers downstream
  START = 1,
  // instance -> its stream manager -> tmaster: task_id saved its state for checkpoint_id
  SAVED = 2,
  // tmaster -> every task: checkpoint_id is complete (post_save; held acks go)
  DONE = 3,
  // tmaster -> every task: roll back to checkpoint_id (0: the empty state) and enter epoch
  RESTORE = 4,
  // instance -> tmaster: task_id restored checkpoint_id in epoch
  RESTORED = 5,
  // tmaster -> every task: every task has restored; go on in epoch
  RESUME = 6,
  // instance -> tmaster: task_id could not save its state for checkpoint_id (error: the storage's message)
  FAILED = 7,
}

struct CheckpointMessage {
  1: required CheckpointStep step,
  2: required i64 checkpoint_id,
  3: optional i64 epoch,
  4: optional i32 task_id,
  // SAVED: bytes written, ms to write them, ms from the first marker to the last (alignment)
  5: optional i64 bytes,
  6: optional double save_ms,
  7: optional double align_ms,
  // FAILED: why (a failure of the checkpoint storage, not of the task's code)
  8: optional string error,
}

// One complete checkpoint: every task of the plan saved its state.
struct CheckpointRecord {
  1: required i64 checkpoint_id,
  2: required string packing_plan_id,
  3: required double time,
  4: required i64 bytes,
  5: required double duration_ms,
  6: required double align_ms,
}

// checkpoints/<topology>: written by the topology master.
struct Checkpoints {
  // complete checkpoints, newest first (the first is what a rollback restores)
  1: required list<CheckpointRecord> complete,
  // the highest checkpoint id and epoch ever used: a new topology master goes on above them
  2: required i64 last_id,
  3: required i64 epoch,
}

// The topology master's figures of its checkpoints (squall metrics, the capacity report).
struct CheckpointStats {
  1: required double interval_secs,
  2: required i64 completed,
  3: required i64 failed,
  4: required i64 restores,
  5: optional CheckpointRecord last,
  // kill -> every task restored and resumed, of the last restore
  6: optional double last_restore_ms,
  7: required string mode,
  // the last checkpoint a task could not save, and why
  8: optional string last_failure,
}

// The one control message: exactly one field is set.
struct Control {
  1: optional RegisterStMgr register_stmgr,
  2: optional RegisterResponse register_response,
  3: optional Heartbeat heartbeat,
  4: optional PhysicalPlan physical_plan,
  5: optional Backpressure backpressure,
  6: optional list<MetricsRow> metrics,
  7: optional MetricsQuery metrics_query,
  8: optional MetricsResponse metrics_response,
  // instance -> its stmgr: tuples of DATA frames it has processed since the last report
  9: optional i64 consumed,
  10: optional CheckpointMessage checkpoint,
  // tmaster -> stmgr: a new plan as a delta of the last one it sent on this connection
  11: optional PhysicalPlanDelta plan_delta,
  // metrics manager -> a sender: how many of the rows sent on this connection are in the file now
  12: optional i64 metrics_written,
}

// One version of a file shipped to every task (squall submit|update --files; docs/debugging.md).
struct ShippedFile {
  // its alias (``alias`` is a Thrift keyword): what tasks ask for, context.get_file(key)
  1: required string key,
  // 1 at submit, one more at each update of the alias
  2: required i32 version,
  // the file's own name: a task finds it as <cache>/<key>/<version>/<name>
  3: required string name,
  4: required i64 size,
  5: required string sha256,
  // where a container fetches it (a file:// or hdfs:// URI); absent: the scheduler localised it into
  // every container at launch (on YARN, Skein's files)
  6: optional string stored,
}

// files/<topology>: the version in force of each shipped file, by key.
struct ShippedFiles {
  1: required list<ShippedFile> files,
}

// One logger level set by `squall set-log-level` (squall/debugging.py has the rules).
struct LogLevel {
  // a logger's name ("root": the root logger)
  1: required string logger,
  // DEBUG, INFO, WARNING, ERROR or CRITICAL
  2: required string level,
  // only the processes of this component's tasks (unset: every process of the topology)
  3: optional string component,
  // wall-clock seconds when it reverts (unset: until reset)
  4: optional double expires,
}

// Tuple sampling set by `squall sample`: a share of a component's emits written to its container's events log.
struct Sampling {
  // 0 < percent <= 100
  1: required double percent,
  // unset: every component
  2: optional string component,
  // wall-clock seconds when it stops (unset: until turned off)
  3: optional double expires,
}

// debug/<topology>: watched by every process of the topology, written by the CLI, the UI and the REST API.
struct Debug {
  1: required list<LogLevel> levels,
  2: required list<Sampling> sampling,
}
