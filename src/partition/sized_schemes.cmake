# Range (bounded partitions) and extendible hashing with Balance.
list(APPEND SHOAL_PARTITION_SOURCES
  balance.cc
  sized_scheme_util.cc
  extendible_scheme.cc
  range_scheme.cc
)
list(APPEND SHOAL_PARTITION_TESTS
  balance_test
  extendible_scheme_test
  range_scheme_test
  sized_scheme_property_test
)
