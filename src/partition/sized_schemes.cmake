# Range (bounded partitions) and extendible hashing with Balance.
list(APPEND SHOAL_PARTITION_SOURCES
  unimplemented_sized_schemes.cc
)
list(APPEND SHOAL_PARTITION_TESTS
)
