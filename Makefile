# The two commands of the README: `make demo` (the main job) and `make test`.
VENV   ?= .venv
PYTHON ?= python3
PY     := $(VENV)/bin/python
SQUALL := $(VENV)/bin/squall

.PHONY: venv bytecode demo test zookeeper browser bench idl clean

venv: $(VENV)/.installed

$(VENV)/.installed: setup.py runtime/instance/_emit.c
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip "setuptools>=64" wheel
	$(PY) -m pip install -q -e '.[all,test]'
	touch $@

# Debian's ZooKeeper: the tests start a real server from its jars.
zookeeper:
	@test -f /usr/share/java/zookeeper.jar || { \
	  echo "installing Debian's zookeeper package"; \
	  apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q zookeeper; }

# Debian's chromium and its driver: the UI tests drive a real headless browser (never a downloaded one).
browser:
	@test -x /usr/bin/chromium -a -x /usr/bin/chromedriver || { \
	  echo "installing Debian's chromium and chromium-driver"; \
	  apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium chromium-driver; }

# Squall's own modules compiled to bytecode, as installing a wheel compiles them: an editable install does
# not, and under PYTHONDONTWRITEBYTECODE no process writes what it compiled, so each of a topology's
# processes compiled every Squall module it imports again (~0.2 s each, ~1 s of every local submit).
# Up-to-date files are skipped.
bytecode: venv
	$(PY) -m compileall -q -j 0 -x '/(\.venv|build)/' .

demo: venv bytecode
	$(PY) examples/demo.py

test: venv bytecode zookeeper browser
	$(PY) -m pytest -q --durations=20 tests  # and the 20 slowest: the suite's budget is 20 minutes

bench: venv
	$(PY) bench/packing.py

# After a change to squall/squall.thrift: thriftpy2's parse of it, kept so that no process parses it again.
idl: venv
	$(PY) -c "from squall.idl_cache import write; write()"

clean:
	rm -rf $(VENV) build *.egg-info
