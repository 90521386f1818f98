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
}
