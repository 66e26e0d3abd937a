#!/bin/sh
# layers_check: each folder includes only itself and the folders below it (README, "Layout"), so
# that each library links only downwards. Tests and their fixtures (*_test.cc, test_*, *_test_*,
# fake_*, *_fixture.h) may reach higher to build what they exercise.
#
# Usage: check_layers.sh SOURCE_DIR
set -eu
cd "$1"

# The folders a folder may include, besides itself.
allowed() {
  case "$1" in
    # Public headers include only public headers (and standard ones: see below).
    include/shoal) echo "" ;;
    # The implementation of the public status type (include/shoal/status.h).
    src/common) echo "include/shoal" ;;
    src/partition) echo "src/common" ;;
    src/cluster) echo "src/common src/partition" ;;
    src/storage) echo "src/common" ;;
    # The embedded metadata store writes RocksDB's info log as the node's store does
    # (src/storage/engine_info_log.h, its own library on src/common and RocksDB).
    src/metadata) echo "src/common src/storage" ;;
    src/transport) echo "src/common src/partition src/cluster src/storage" ;;
    # The storage node uses the hot-key sketch of src/hotspot (shoal_hotspot_sketch), which
    # needs nothing above src/common.
    src/node) echo "src/common src/cluster src/storage src/transport src/hotspot" ;;
    src/coordinator) echo "src/common src/cluster src/storage src/metadata src/transport" ;;
    src/client) echo "src/common src/cluster src/storage src/transport" ;;
    src/hotspot) echo "src/common src/storage src/transport src/client" ;;
    src/api) echo "include/shoal src/common src/storage src/transport src/client src/hotspot" ;;
    src/server)
      echo "include/shoal src/common src/cluster src/storage src/metadata src/transport src/node"
      echo "src/coordinator src/client src/hotspot src/api"
      ;;
    src/security) echo "src/common" ;;
    src/net) echo "proto src/common src/cluster src/storage src/transport src/security" ;;
    src/remote)
      echo "include/shoal src/common src/transport src/client src/api src/net src/security"
      ;;
    src/process)
      echo "proto src/common src/cluster src/storage src/metadata src/transport src/node"
      echo "src/coordinator src/net src/security"
      ;;
    examples) echo "include/shoal" ;;
    *) echo "?" ;;
  esac
}

status=0
for dir in include/shoal src/common src/partition src/cluster src/storage src/metadata \
    src/transport src/security src/node src/coordinator src/client src/hotspot src/api src/server \
    src/net src/remote src/process examples; do
  ok=" $dir $(allowed "$dir" | tr '\n' ' ') "
  for file in "$dir"/*.h "$dir"/*.cc; do
    [ -e "$file" ] || continue
    case "$(basename "$file")" in
      *_test.cc | test_* | *_test_* | fake_* | *_fixture.h) continue ;;
    esac
    for used in $(sed -n -E 's,^#include "(src/[a-z_]+|include/shoal|proto)/.*,\1,p' "$file" |
                  sort -u); do
      case "$ok" in
        *" $used "*) ;;
        *)
          echo "$file includes $used, which is not below $dir"
          status=1
          ;;
      esac
    done
  done
done
# Public headers name no third-party type: besides public headers they include only standard
# headers (no extension, no folder), except the opt-in JSON forms of hotspot_json.h.
for file in include/shoal/*.h; do
  for used in $(sed -n -E 's,^#include <([^>]+)>.*,\1,p' "$file"); do
    case "$(basename "$file"):$used" in
      hotspot_json.h:nlohmann/json.hpp) ;;
      *.h:*/* | *.h:*.h | *.h:*.hpp)
        echo "$file includes <$used>, which is not a standard header"
        status=1
        ;;
    esac
  done
done
[ "$status" -eq 0 ] && echo "every folder includes only itself and the folders below it"
exit "$status"
