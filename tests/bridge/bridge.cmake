# yao-bridge tests, included by tests/tests.cmake. Everything here runs against real
# peers: tests/bridge/peer.c is a Unix/TCP/TLS server with the token handshake,
# tests/bridge/grpcpeer a grpc-go server of yao.Yao for the grpc mode, and bridge_tests.py
# drives the real yao-bridge binary against them (label `bridge`).
#
#   cmake --build BUILD --target yao-bridge yao-bridge-test-peer test_bridge_auth test_bridge_mcp \
#       test_bridge_heartbeat test_bridge_policy  (+ yao-bridge_san and test_bridge_*_san)
#   (cd BUILD && ctest -L bridge --output-on-failure)
if(NOT TARGET yao-bridge)
  return()
endif()

set(YAO_BRIDGE_TEST_DIR ${CMAKE_SOURCE_DIR}/tests/bridge)

# The peer: one-connection MCP / echo / send / sink server (see peer.c).
add_executable(yao-bridge-test-peer ${YAO_BRIDGE_TEST_DIR}/peer.c)
target_link_libraries(yao-bridge-test-peer PkgConfig::OPENSSL)

# A unit test of bridge sources: plain (label bridge), under ASan+UBSan when the tree builds
# sanitized tests, and under valgrind when it is installed — as tests/tests.cmake does for
# the controller's units.
function(yao_bridge_unit name)
  set(srcs ${YAO_BRIDGE_TEST_DIR}/${name}.c)
  foreach(s ${ARGN})
    list(APPEND srcs ${CMAKE_SOURCE_DIR}/bridge/${s})
  endforeach()
  add_executable(${name} ${srcs})
  target_include_directories(${name} PRIVATE ${CMAKE_SOURCE_DIR}/bridge)
  target_link_libraries(${name} PkgConfig::OPENSSL)
  add_test(NAME bridge.${name} COMMAND ${name})
  set_tests_properties(bridge.${name} PROPERTIES LABELS bridge)
  if(YAO_SANITIZED_TESTS)
    add_executable(${name}_san ${srcs})
    target_include_directories(${name}_san PRIVATE ${CMAKE_SOURCE_DIR}/bridge)
    target_link_libraries(${name}_san PkgConfig::OPENSSL)
    target_compile_options(${name}_san PRIVATE ${YAO_SAN_FLAGS})
    target_link_options(${name}_san PRIVATE ${YAO_SAN_FLAGS})
    add_test(NAME bridge-asan.${name} COMMAND ${name}_san)
    set_tests_properties(bridge-asan.${name} PROPERTIES LABELS "bridge;unit-asan"
      ENVIRONMENT "ASAN_OPTIONS=detect_leaks=1;UBSAN_OPTIONS=print_stacktrace=1")
  endif()
  if(VALGRIND)
    add_test(NAME bridge-valgrind.${name}
      COMMAND ${VALGRIND} --quiet --error-exitcode=99 --leak-check=full
              --errors-for-leak-kinds=definite,indirect,possible --show-leak-kinds=definite,indirect,possible
              $<TARGET_FILE:${name}>)
    set_tests_properties(bridge-valgrind.${name} PROPERTIES LABELS "bridge;unit-valgrind")
  endif()
endfunction()

# The pure half of the handshake (framing, reply parser, token loading), no network.
yao_bridge_unit(test_bridge_auth bridge_auth.c bridge_util.c)
# The pure half of the grpc mode (JSON scanner, proto3, MCP mapping), no network.
yao_bridge_unit(test_bridge_mcp bridge_json.c bridge_pb.c bridge_mcp.c bridge_util.c)
# Heartbeat (interval, schedule, message, answers) and the cgroup / /proc sampler on
# fixture trees (v2 and v1), no network.
yao_bridge_unit(test_bridge_heartbeat bridge_heartbeat.c bridge_stats.c bridge_pb.c bridge_util.c)
# Who may get the token over plain TCP (address classes, the hosts-file pin, verdicts).
yao_bridge_unit(test_bridge_policy bridge_policy.c)

# The grpc mode's peer: a grpc-go server generated from grpcpeer/yao.proto, built by its
# build.sh from the Go module proxy and cached outside the repository by a hash of its
# sources. Built as a test fixture, so `cmake --build` never needs Go or the network.
set(YAO_GRPCPEER ${CMAKE_BINARY_DIR}/bin/yao-grpcpeer)
add_test(NAME bridge.grpcpeer.build COMMAND ${YAO_BRIDGE_TEST_DIR}/grpcpeer/build.sh ${YAO_GRPCPEER})
set_tests_properties(bridge.grpcpeer.build PROPERTIES LABELS bridge TIMEOUT 600
  FIXTURES_SETUP yao_grpcpeer)

find_package(Python3 COMPONENTS Interpreter)
if(Python3_Interpreter_FOUND)
  set(YAO_BRIDGE_DRIVER ${Python3_EXECUTABLE} ${YAO_BRIDGE_TEST_DIR}/bridge_tests.py
      --bridge $<TARGET_FILE:yao-bridge> --peer $<TARGET_FILE:yao-bridge-test-peer>
      --grpcpeer ${YAO_GRPCPEER})
  # The whole suite in one run, so its closing line counts every case.
  add_test(NAME bridge.suite COMMAND ${YAO_BRIDGE_DRIVER})
  set_tests_properties(bridge.suite PROPERTIES LABELS bridge TIMEOUT 600
    FIXTURES_REQUIRED yao_grpcpeer)

  # The whole suite against the bridge built with ASan+UBSan: undefined behaviour that
  # valgrind does not see (memchr on an empty buffer's NULL pointer) fails its case.
  if(YAO_SANITIZED_TESTS)
    add_executable(yao-bridge_san ${YAO_BRIDGE_SOURCES})
    target_link_libraries(yao-bridge_san PkgConfig::OPENSSL PkgConfig::NGHTTP2)
    target_compile_options(yao-bridge_san PRIVATE ${YAO_SAN_FLAGS})
    target_link_options(yao-bridge_san PRIVATE ${YAO_SAN_FLAGS})
    add_test(NAME bridge.asan COMMAND ${Python3_EXECUTABLE} ${YAO_BRIDGE_TEST_DIR}/bridge_tests.py
      --bridge $<TARGET_FILE:yao-bridge_san> --peer $<TARGET_FILE:yao-bridge-test-peer>
      --grpcpeer ${YAO_GRPCPEER})
    set_tests_properties(bridge.asan PROPERTIES LABELS "bridge;unit-asan" TIMEOUT 600
      FIXTURES_REQUIRED yao_grpcpeer ENVIRONMENT "ASAN_OPTIONS=detect_leaks=1;UBSAN_OPTIONS=print_stacktrace=1")
  endif()

  # The bridge itself under valgrind on a Unix and a TLS exchange: no leaks, no errors.
  find_program(YAO_BRIDGE_VALGRIND valgrind)
  if(YAO_BRIDGE_VALGRIND)
    add_test(NAME bridge.valgrind COMMAND ${YAO_BRIDGE_DRIVER}
      --valgrind ${YAO_BRIDGE_VALGRIND}
      --only unix_mcp_exchange,unix_half_close,tcp_wrong_token,tls_mcp_half_close,tls_10mb_binary,peer_absent,grpc_mcp_session,grpc_large_result,grpc_server_dies,grpc_wrong_token,grpc_token_rotation,grpc_tls,grpc_deadline,grpc_protocol_errors,grpc_config_errors,token_plain_refused,token_tai_host,grpc_heartbeat_shutdown,grpc_heartbeat_unimplemented,grpc_heartbeat_server_down,grpc_heartbeat_blackhole)
    set_tests_properties(bridge.valgrind PROPERTIES LABELS bridge TIMEOUT 900
      FIXTURES_REQUIRED yao_grpcpeer)
  endif()
endif()
