# Ring, rendezvous, jump and static bucketing.
list(APPEND SHOAL_PARTITION_SOURCES
  hash_scheme_util.cc
  ring_scheme.cc
  rendezvous_scheme.cc
  jump_scheme.cc
  static_scheme.cc
)
list(APPEND SHOAL_PARTITION_TESTS
  ring_scheme_test
  rendezvous_scheme_test
  jump_scheme_test
  static_scheme_test
  hash_schemes_property_test
)
