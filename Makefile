# The two commands of the README: `make demo` (the main job) and `make test`.
VENV   ?= .venv
PYTHON ?= python3
PY     := $(VENV)/bin/python
SQUALL := $(VENV)/bin/squall

.PHONY: venv demo test zookeeper bench clean

venv: $(VENV)/.installed

$(VENV)/.installed: setup.py
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip "setuptools>=64" wheel
	$(PY) -m pip install -q -e '.[all,test]'
	touch $@

# Debian's ZooKeeper: the tests start a real server from its jars.
zookeeper:
	@test -f /usr/share/java/zookeeper.jar || { \
	  echo "installing Debian's zookeeper package"; \
	  apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q zookeeper; }

demo: venv
	$(PY) examples/demo.py

test: venv zookeeper
	$(PY) -m pytest -q tests

bench: venv
	$(PY) bench/packing.py

clean:
	rm -rf $(VENV) build *.egg-info
