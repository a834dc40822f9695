# Test registration. Everything runs under one ctest invocation so the closing summary
# covers the whole run:
#   unit         — tests/unit/test_*.c, one binary each, no network (test_cli_*.c link the
#                  CLI's library yaocli, the others yaocore)
#   unit-asan    — the same sources under ASan+UBSan
#   unit-tsan    — the units that run threads, under ThreadSanitizer (<name>_tsan; TSan
#                  and ASan cannot share a binary), through tests/tsan/run
#   unit-valgrind— the plain unit binaries under valgrind --leak-check=full
#   cluster      — integration suites against the real local control plane, brought up
#                  once per run by the `plane` fixture and torn down at the end.
#   docs         — docs/api-reference.md matches the CRDs; no link of the docs leaves the repo

file(GLOB YAO_UNIT_TESTS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/unit/test_*.c)
set(YAO_SAN_FLAGS -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all)

if(YAO_SANITIZED_TESTS)
  add_library(yaocore_san STATIC ${YAO_CORE_SOURCES})
  target_include_directories(yaocore_san PUBLIC ${YAO_CORE_INCLUDES})
  target_link_libraries(yaocore_san PUBLIC ${YAO_CORE_LIBS})
  target_compile_options(yaocore_san PUBLIC ${YAO_SAN_FLAGS})
  target_link_options(yaocore_san PUBLIC ${YAO_SAN_FLAGS})
  if(YAO_CLI_SOURCES)
    add_library(yaocli_san STATIC ${YAO_CLI_SOURCES})
    target_include_directories(yaocli_san PUBLIC ${YAO_CLI_INCLUDES})
    target_link_libraries(yaocli_san PUBLIC yaocore_san)
  endif()
endif()

# ThreadSanitizer: a third build of the core (and the CLI) for the units that run threads,
# named here (label unit-tsan). A unit runs threads when its source starts one itself
# (pthread_create, or the scripted WebSocket peer of exec_peer.h) or through the code it
# tests: an informer, the leader elector, the probe server, the Event recorder, an exec or
# port-forward session (their reader thread), the controller's workers, the CLI's wait, or
# the in-process fake API server (fakeapi.h, and the pass suites' reconcile_env.h, whose
# controller's informers watch it). The list is explicit; configure fails when a unit whose
# source shows one of those marks is not on it, so a new threaded unit cannot be missed.
option(YAO_TSAN_TESTS "Also build the unit tests that run threads with ThreadSanitizer" ON)
set(YAO_TSAN_FLAGS -fsanitize=thread -fno-omit-frame-pointer)
set(YAO_TSAN_UNITS
  test_cli_waiter test_config test_credplugin test_events test_exec_end test_exec test_fairness
  test_httpd test_informer_faults test_leader_faults test_portforward test_queue test_rest_cancel
  test_tunnel test_watch_faults test_wsstream
  test_reconcile_binder test_reconcile_cleanup test_reconcile_expose test_reconcile_fork test_reconcile_lifecycle test_reconcile_metrics test_reconcile_reclaim test_reconcile_shard
  test_reconcile_warm test_reconcile_warmidle test_reconcile_workers)
set(YAO_TSAN_STARTS_THREADS
  "pthread_create|exec_peer\\.h|fakeapi\\.h|reconcile_env\\.h|informer_start|leader_start|httpd_start|kube_recorder_new|kube_exec\\(|kube_portforward\\(|sbx_controller_run|cluster_wait")
# halt_on_error: the first report fails the test; second_deadlock_stack: a lock-order
# report shows both acquisitions. The suppressions are third-party internals only.
set(YAO_TSAN_OPTIONS "halt_on_error=1:second_deadlock_stack=1:suppressions=${CMAKE_SOURCE_DIR}/tests/tsan/suppressions.txt")
if(YAO_TSAN_TESTS)
  add_library(yaocore_tsan STATIC ${YAO_CORE_SOURCES})
  target_include_directories(yaocore_tsan PUBLIC ${YAO_CORE_INCLUDES})
  target_link_libraries(yaocore_tsan PUBLIC ${YAO_CORE_LIBS})
  target_compile_options(yaocore_tsan PUBLIC ${YAO_TSAN_FLAGS})
  target_link_options(yaocore_tsan PUBLIC ${YAO_TSAN_FLAGS})
  if(YAO_CLI_SOURCES)
    add_library(yaocli_tsan STATIC ${YAO_CLI_SOURCES})
    target_include_directories(yaocli_tsan PUBLIC ${YAO_CLI_INCLUDES})
    target_link_libraries(yaocli_tsan PUBLIC yaocore_tsan)
  endif()
endif()

find_program(VALGRIND valgrind)
foreach(src ${YAO_UNIT_TESTS})
  get_filename_component(name ${src} NAME_WE)
  # test_cli_* test the CLI's library (cli/), the others the core.
  set(lib yaocore)
  if(name MATCHES "^test_cli_")
    set(lib yaocli)
  endif()
  add_executable(${name} ${src})
  target_include_directories(${name} PRIVATE ${CMAKE_SOURCE_DIR}/tests/unit)
  target_link_libraries(${name} ${lib})
  add_test(NAME unit.${name} COMMAND ${name})
  set_tests_properties(unit.${name} PROPERTIES LABELS unit
    ENVIRONMENT "YAO_TEST_DATA=${CMAKE_SOURCE_DIR}/tests/unit/data")
  if(YAO_SANITIZED_TESTS)
    add_executable(${name}_san ${src})
    target_include_directories(${name}_san PRIVATE ${CMAKE_SOURCE_DIR}/tests/unit)
    target_link_libraries(${name}_san ${lib}_san)
    add_test(NAME unit-asan.${name} COMMAND ${name}_san)
    set_tests_properties(unit-asan.${name} PROPERTIES LABELS unit-asan
      ENVIRONMENT "YAO_TEST_DATA=${CMAKE_SOURCE_DIR}/tests/unit/data;ASAN_OPTIONS=detect_leaks=1;UBSAN_OPTIONS=print_stacktrace=1")
  endif()
  if(YAO_TSAN_TESTS)
    file(READ ${src} body)
    if(body MATCHES "${YAO_TSAN_STARTS_THREADS}" AND NOT name IN_LIST YAO_TSAN_UNITS)
      message(FATAL_ERROR "${name} runs threads (its source matches '${CMAKE_MATCH_0}'): add it to YAO_TSAN_UNITS in tests/tests.cmake")
    endif()
    if(name IN_LIST YAO_TSAN_UNITS)
      add_executable(${name}_tsan ${src})
      target_include_directories(${name}_tsan PRIVATE ${CMAKE_SOURCE_DIR}/tests/unit)
      target_link_libraries(${name}_tsan ${lib}_tsan)
      add_test(NAME unit-tsan.${name} COMMAND ${CMAKE_SOURCE_DIR}/tests/tsan/run $<TARGET_FILE:${name}_tsan>)
      set_tests_properties(unit-tsan.${name} PROPERTIES LABELS unit-tsan
        ENVIRONMENT "YAO_TEST_DATA=${CMAKE_SOURCE_DIR}/tests/unit/data;TSAN_OPTIONS=${YAO_TSAN_OPTIONS}")
    endif()
  endif()
  if(VALGRIND)
    add_test(NAME unit-valgrind.${name}
      COMMAND ${VALGRIND} --quiet --error-exitcode=99 --leak-check=full
              --errors-for-leak-kinds=definite,indirect,possible --show-leak-kinds=definite,indirect,possible
              $<TARGET_FILE:${name}>)
    set_tests_properties(unit-valgrind.${name} PROPERTIES LABELS unit-valgrind
      ENVIRONMENT "YAO_TEST_DATA=${CMAKE_SOURCE_DIR}/tests/unit/data")
  endif()
endforeach()

# Driver of kube_exec for tests/integration/test_exec.sh (and the benchmark).
# (Guarded: the image build copies only this file, not the test sources.)
if(EXISTS ${CMAKE_SOURCE_DIR}/tests/integration/exec_probe.c)
  add_executable(exec_probe ${CMAKE_SOURCE_DIR}/tests/integration/exec_probe.c)
  target_link_libraries(exec_probe yaocore)
endif()

# The C side of the CIDR reference comparison (tests/cidrref/cidrref.go, Go's net/netip and
# net.ParseCIDR against sbx_cidr_parse and sbx_cidr_contains): run when Go is installed.
if(EXISTS ${CMAKE_SOURCE_DIR}/tests/cidrref/cidr_driver.c)
  add_executable(cidr_driver ${CMAKE_SOURCE_DIR}/tests/cidrref/cidr_driver.c)
  target_link_libraries(cidr_driver yaocore)
  find_program(GO_EXECUTABLE go)
  if(GO_EXECUTABLE)
    add_test(NAME fuzz-ref.cidr
      COMMAND ${GO_EXECUTABLE} run ${CMAKE_SOURCE_DIR}/tests/cidrref/cidrref.go -driver $<TARGET_FILE:cidr_driver> -n 200000)
    set_tests_properties(fuzz-ref.cidr PROPERTIES LABELS unit ENVIRONMENT "GO111MODULE=off")
  endif()
endif()

# Integration suites: tests/integration/*.sh, each gets KUBECONFIG of the shared plane.
#                  With YAO_REAL_NODE_TESTS (default ON) the plane has a real node
#                  (kubelet + containerd, tests/cluster/up --real-node) and the
#                  test_node_*.sh suites run real containers on it.
option(YAO_CLUSTER_TESTS "Run integration tests against the local control plane" ON)
option(YAO_REAL_NODE_TESTS "Join a real kubelet + containerd node and run the suites that need it" ON)
if(YAO_CLUSTER_TESTS)
  set(YAO_PLANE_ENV "YAO_BUILD_DIR=${CMAKE_BINARY_DIR};YAO_SOURCE_DIR=${CMAKE_SOURCE_DIR}")
  if(YAO_REAL_NODE_TESTS)
    add_test(NAME cluster.up COMMAND ${CMAKE_SOURCE_DIR}/tests/cluster/up --real-node)
  else()
    add_test(NAME cluster.up COMMAND ${CMAKE_SOURCE_DIR}/tests/cluster/up)
  endif()
  # (it builds the images for the real node: not at the same time as the image suite)
  set_tests_properties(cluster.up PROPERTIES FIXTURES_SETUP plane LABELS cluster
    ENVIRONMENT "${YAO_PLANE_ENV}" TIMEOUT 3600 RESOURCE_LOCK images)
  add_test(NAME cluster.down COMMAND ${CMAKE_SOURCE_DIR}/tests/cluster/down)
  set_tests_properties(cluster.down PROPERTIES FIXTURES_CLEANUP plane LABELS cluster
    ENVIRONMENT "${YAO_PLANE_ENV}")
  if(YAO_REAL_NODE_TESTS)
    # gVisor's runsc and shim for the real node (cached by version; ~5 minutes cold): built
    # beside the other tests, before the one suite that needs them.
    add_test(NAME cluster.gvisor_build COMMAND ${CMAKE_SOURCE_DIR}/tests/cluster/gvisor)
    set_tests_properties(cluster.gvisor_build PROPERTIES LABELS cluster TIMEOUT 2400)
  endif()
  # Two lanes on the one plane. A suite of the kwok lane keeps to its own namespaces and a
  # controller run with --namespace, and changes nothing cluster-wide another suite reads;
  # one of the node lane does too, and pins its pods to the real node by namespace
  # (lib.sh: use_real_node, pin_namespace), so a kwok suite and a real-node suite can run
  # at the same time, each holding its lane's lock. Every other suite holds both: it makes
  # a default SandboxClass (class, policy, helm), restarts parts of the plane (chaos,
  # controller), runs a controller over every namespace (operate, security, tenancy, the
  # in-cluster ones of helm, node_incluster, node_yao, the demo's), or swaps the nodes'
  # cordons (bench_smoke, node_bench_single, use_real_node --whole-node).
  set(YAO_KWOK_LANE auth churn cli cli_verbs events exec fork goclient hostile keepalive
    lifecycle netpol orphans plane shard warm)
  set(YAO_NODE_LANE node_activity node_agents node_bridge node_cli node_docs node_exec
    node_fork node_goclient node_gvisor node_netpol node_ports node_registry node_resize
    node_sandbox node_warm node_warmidle node_yaovolume)
  file(GLOB YAO_INTEGRATION_TESTS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/integration/test_*.sh)
  foreach(script ${YAO_INTEGRATION_TESTS})
    get_filename_component(name ${script} NAME_WE)
    if(name MATCHES "^test_node_" AND NOT YAO_REAL_NODE_TESTS)
      continue()
    endif()
    add_test(NAME cluster.${name} COMMAND bash ${script})
    if(name STREQUAL "test_node_token_rotation")
      # ~11 minutes of waiting for a token to expire: runs beside the other suites (it
      # keeps to its own release and namespaces), after the chaos run that restarts the
      # plane's components.
      set_tests_properties(cluster.${name} PROPERTIES FIXTURES_REQUIRED plane LABELS cluster
        DEPENDS cluster.test_chaos ENVIRONMENT "${YAO_PLANE_ENV}" TIMEOUT 1200)
      continue()
    endif()
    string(REGEX REPLACE "^test_" "" suite ${name})
    if(suite IN_LIST YAO_KWOK_LANE)
      set(lane kwok)
      set(locks plane-kwok)
    elseif(suite IN_LIST YAO_NODE_LANE)
      set(lane node)
      set(locks plane-node)
    else()
      set(lane all)
      set(locks "plane-kwok;plane-node")
    endif()
    if(name STREQUAL "test_node_agents")
      # images/build.sh builds the agent images on the sandbox base image the image suite
      # builds and tags too: never at the same time
      list(APPEND locks images)
    endif()
    set_tests_properties(cluster.${name} PROPERTIES FIXTURES_REQUIRED plane LABELS cluster
      RESOURCE_LOCK "${locks}" ENVIRONMENT "${YAO_PLANE_ENV};YAO_SUITE_LANE=${lane}" TIMEOUT 900)
    if(name STREQUAL "test_node_gvisor")
      set_tests_properties(cluster.${name} PROPERTIES DEPENDS cluster.gvisor_build)
    endif()
  endforeach()
endif()

# Docs that cannot drift: the API reference is what the CRDs give, and no link of the README
# or docs/ leaves the repository or points at nothing.
add_test(NAME docs.api_reference COMMAND python3 ${CMAKE_SOURCE_DIR}/docs/tools/api-reference.py --check)
add_test(NAME docs.links COMMAND python3 ${CMAKE_SOURCE_DIR}/docs/tools/check-links.py)
set_tests_properties(docs.api_reference docs.links PROPERTIES LABELS docs)

# The Go client (clients/go): go vet and its unit tests under the race detector (label
# unit; its integration tests skip without a cluster — tests/integration/test_goclient.sh
# runs the whole module against the plane). Needs the Go toolchain and the module cache or
# the Go module proxy; skipped when there is no Go.
find_program(YAO_GO go PATHS /usr/local/go/bin)
if(YAO_GO AND EXISTS ${CMAKE_SOURCE_DIR}/clients/go/go.mod)
  add_test(NAME unit.goclient
    COMMAND sh -c "\"$0\" vet ./... && \"$0\" test -count=1 -race -timeout 600s ./..." ${YAO_GO}
    WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}/clients/go)
  set_tests_properties(unit.goclient PROPERTIES LABELS unit TIMEOUT 900)
endif()

# yao-bridge tests (their own registration, next to their peers).
include(${CMAKE_SOURCE_DIR}/tests/bridge/bridge.cmake OPTIONAL)

# Container images (buildah): built and checked by tests/images/test_images.sh.
include(${CMAKE_SOURCE_DIR}/tests/images/images.cmake OPTIONAL)

# Fuzz regressions: each fuzz/fuzz_<t>.c linked with fuzz/replay.c instead of libFuzzer
# replays the saved crashes in fuzz/regressions/<t>/ and the seed corpus fuzz/corpus/<t>/
# (ASan+UBSan when YAO_SANITIZED_TESTS). The fuzzing itself is fuzz/run.sh (clang).
file(GLOB YAO_FUZZ_TARGETS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/fuzz/fuzz_*.c)
foreach(src ${YAO_FUZZ_TARGETS})
  get_filename_component(name ${src} NAME_WE)
  string(REGEX REPLACE "^fuzz_" "" target ${name})
  add_executable(replay_${target} ${CMAKE_SOURCE_DIR}/fuzz/replay.c ${src})
  target_include_directories(replay_${target} PRIVATE ${CMAKE_SOURCE_DIR}/fuzz)
  if(YAO_SANITIZED_TESTS)
    target_link_libraries(replay_${target} yaocore_san)
  else()
    target_link_libraries(replay_${target} yaocore)
  endif()
  add_test(NAME fuzz-replay.${target} COMMAND replay_${target}
    ${CMAKE_SOURCE_DIR}/fuzz/regressions/${target} ${CMAKE_SOURCE_DIR}/fuzz/corpus/${target})
  set_tests_properties(fuzz-replay.${target} PROPERTIES LABELS fuzz-replay
    ENVIRONMENT "YAO_SOURCE_DIR=${CMAKE_SOURCE_DIR};ASAN_OPTIONS=detect_leaks=1;UBSAN_OPTIONS=print_stacktrace=1")
endforeach()
# A bounded libFuzzer run of every target (clang): 10 s each in make test.
add_test(NAME fuzz.run COMMAND ${CMAKE_SOURCE_DIR}/fuzz/run.sh 10)
set_tests_properties(fuzz.run PROPERTIES LABELS fuzz TIMEOUT 600 RESOURCE_LOCK fuzz)
