# Code layout: no call cycles between the files of a folder
# (scripts/callcycles, docs/ARCHITECTURE.md "Layers inside a folder").
# daemon/, cli/, analyzer/, store/ and shim/ have none: any cycle fails
# the test (scripts/callcycles' --allow is not used; the last shim
# cycles were broken for issue 26).  Reads the object files of the build.
find_program(GPD_PYTHON3_LAYOUT python3)
if(GPD_PYTHON3_LAYOUT)
  add_test(NAME layout.callcycles
    COMMAND ${GPD_PYTHON3_LAYOUT} ${PROJECT_SOURCE_DIR}/scripts/callcycles
            ${CMAKE_BINARY_DIR} daemon cli analyzer store shim)
  set_tests_properties(layout.callcycles PROPERTIES LABELS unit TIMEOUT 300)

  # One meaning per prefix (docs/ARCHITECTURE.md "Names"): no gpd_<word>_
  # (or gpd__<word>_) function is defined by the object files of two of
  # these folders (scripts/prefixes; no --allow prefix is needed).
  add_test(NAME layout.prefixes
    COMMAND ${GPD_PYTHON3_LAYOUT} ${PROJECT_SOURCE_DIR}/scripts/prefixes
            ${CMAKE_BINARY_DIR} shim daemon cli analyzer store common)
  set_tests_properties(layout.prefixes PROPERTIES LABELS unit TIMEOUT 300)

  # File names that match their prefixes (docs/ARCHITECTURE.md "Names"):
  # each global gpd_<word>_ function of a product file has its file's
  # name as <word>, or a convention prefix of its folder, or one of the
  # (file, prefix) pairs scripts/prefixes allows.
  add_test(NAME layout.fileprefixes
    COMMAND ${GPD_PYTHON3_LAYOUT} ${PROJECT_SOURCE_DIR}/scripts/prefixes --files
            ${CMAKE_BINARY_DIR} shim daemon cli analyzer store common)
  set_tests_properties(layout.fileprefixes PROPERTIES LABELS unit TIMEOUT 300)

  # No two structs of one name (docs/ARCHITECTURE.md "Names"): a struct
  # tag or typedef name of the product folders names one struct
  # (scripts/structnames reads the sources).  The self-test runs it on
  # crafted trees that hold each kind of duplicate and must fail.
  add_test(NAME layout.structnames
    COMMAND ${GPD_PYTHON3_LAYOUT} ${PROJECT_SOURCE_DIR}/scripts/structnames
            --top ${PROJECT_SOURCE_DIR} shim daemon cli analyzer store common)
  set_tests_properties(layout.structnames PROPERTIES LABELS unit TIMEOUT 60)
  add_test(NAME layout.structnames_selftest
    COMMAND bash ${PROJECT_SOURCE_DIR}/tests/layout/structnames.sh ${PROJECT_SOURCE_DIR})
  set_tests_properties(layout.structnames_selftest PROPERTIES LABELS unit TIMEOUT 60)
endif()

# Issue 26's measured shape: no .c file over 800 lines in shim/, daemon/,
# cli/, analyzer/, store/; SQL statements only under store/.
add_test(NAME layout.sizes COMMAND bash ${PROJECT_SOURCE_DIR}/tests/layout/sizes.sh ${PROJECT_SOURCE_DIR})
set_tests_properties(layout.sizes PROPERTIES LABELS unit TIMEOUT 60)
