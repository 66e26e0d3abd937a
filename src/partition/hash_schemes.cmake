# Ring, rendezvous, jump and static bucketing.
list(APPEND SHOAL_PARTITION_SOURCES
  unimplemented_hash_schemes.cc
)
list(APPEND SHOAL_PARTITION_TESTS
)
