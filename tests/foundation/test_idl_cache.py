"""The schema kept in squall/squall_thrift.json: made from this IDL, and the same module thriftpy2's parse
makes (every class's attributes, and the bytes its structs encode to)."""
import pytest
import thriftpy2
from thriftpy2.parser.parser import parse
from thriftpy2.thrift import TPayload

from squall import idl, idl_cache


def parsed():
    return parse(idl_cache.IDL, module_name="squall_thrift", enable_cache=False)


def test_the_kept_schema_is_of_this_idl():
    kept = idl_cache.read(idl_cache.CACHE, idl_cache.digest(), thriftpy2.__version__)
    if kept is None:
        with open(idl_cache.CACHE) as f:
            head = f.readline()
        assert idl_cache.digest() in head, "squall/squall.thrift changed: run `make idl` to keep its parse again"
        pytest.skip(f"kept by another thriftpy2 than {thriftpy2.__version__}: processes parse the IDL")
    assert kept == idl_cache.describe(parsed(), idl_cache.digest(), thriftpy2.__version__)
    assert idl.schema.__name__ == "squall_thrift" and idl.schema.Debug.__module__ == "squall_thrift"


def test_restored_classes_are_the_parsed_ones():
    module = parsed()
    description = idl_cache.describe(module, "-", "-")
    restored = idl_cache.restore(description, "squall_thrift", idl_cache.IDL)
    assert idl_cache.describe(restored, "-", "-") == description
    assert restored.__thrift_file__ == module.__thrift_file__
    assert restored.__thrift_namespaces__ == module.__thrift_namespaces__
    for kind in ("enums", "structs"):
        assert [c.__name__ for c in restored.__thrift_meta__[kind]] == [c.__name__ for c in module.__thrift_meta__[kind]]
    spec = restored.InstancePlan.thrift_spec[1]
    assert spec[2] is restored.InstanceId and issubclass(restored.InstancePlan, TPayload)
    assert restored.Role._VALUES_TO_NAMES[restored.Role.TMASTER] == "TMASTER"


@pytest.mark.parametrize("make", [parsed, lambda: idl_cache.restore(idl_cache.describe(parsed(), "-", "-"),
                                                                   "squall_thrift", idl_cache.IDL)])
def test_structs_encode_to_the_same_bytes(make):
    def plan(m):
        one = m.Resources(cpu=0.5, ram_mb=256, disk_mb=1024)
        return m.PackingPlan(id="p1", algorithm="ffd", granularity="task", containers=[m.ContainerPlan(
            id=1, resources=one, padding=m.Resources(cpu=0.0, ram_mb=0, disk_mb=0),
            instances=[m.InstancePlan(id=m.InstanceId(component="split", task_id=3, component_index=1), resources=one)])])

    module = make()
    reference = idl.encode(plan(parsed()))
    assert idl.encode(plan(module)) == reference
    decoded = idl.decode(module.PackingPlan, reference)
    assert decoded == plan(module) and decoded.containers[0].instances[0].id.task_id == 3
    hello = module.Hello(topology_name="t", role=module.Role.STMGR)
    assert idl.encode(hello) == idl.encode(parsed().Hello(topology_name="t", role=2))
