# Container image tests (label `images`): builds both images with images/build.sh and
# checks them with `buildah run --isolation=chroot`. Needs root and the Debian mirror;
# about 2 min cold, ~20 s warm. To register, in tests/tests.cmake:
#   include(${CMAKE_SOURCE_DIR}/tests/images/images.cmake OPTIONAL)
option(YAO_IMAGE_TESTS "Build and test the container images (needs root, buildah)" ON)
if(YAO_IMAGE_TESTS)
  add_test(NAME images.build_and_run COMMAND bash ${CMAKE_SOURCE_DIR}/tests/images/test_images.sh)
  set_tests_properties(images.build_and_run PROPERTIES LABELS images TIMEOUT 1800
    RESOURCE_LOCK images)
endif()
