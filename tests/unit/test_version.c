/* test_version.c - nnmem_version() and nnmem_version_number() agree with the
 * generated nnmem/version.h and with each other, and the header macros with
 * the project() line of CMakeLists.txt (parsed here, independently of
 * CMake's configure_file). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "nnmem/nnmem.h"

static void test_runtime_matches_headers(void **state) {
  (void)state;
  assert_string_equal(nnmem_version(), NNMEM_VERSION_STRING);
  assert_int_equal(nnmem_version_number(), NNMEM_VERSION_NUMBER);
  assert_ptr_equal(nnmem_version(), nnmem_version()); /* a static string */
}

static void test_number_encodes_string(void **state) {
  (void)state;
  unsigned major = 0, minor = 0, patch = 0;
  char tail = 0;
  assert_int_equal(
      sscanf(nnmem_version(), "%u.%u.%u%c", &major, &minor, &patch, &tail), 3);
  assert_true(minor < 1000 && patch < 1000);
  assert_int_equal(nnmem_version_number(),
                   major * 1000000u + minor * 1000u + patch);
  assert_int_equal(major, NNMEM_VERSION_MAJOR);
  assert_int_equal(minor, NNMEM_VERSION_MINOR);
  assert_int_equal(patch, NNMEM_VERSION_PATCH);
}

/* The version in CMakeLists.txt's project() line is the one compiled in. */
static void test_matches_cmakelists(void **state) {
  (void)state;
  FILE *f = fopen(NNMEM_SOURCE_DIR "/CMakeLists.txt", "r");
  assert_non_null(f);
  char line[256], version[64] = "";
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "project(nnmem VERSION %63[0-9.]", version) == 1) break;
  fclose(f);
  assert_string_equal(version, nnmem_version());
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_runtime_matches_headers),
      cmocka_unit_test(test_number_encodes_string),
      cmocka_unit_test(test_matches_cmakelists),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
