# The HTTP client half of feedplane::net (response parser, content decoding, TLS, DNS,
# HTTP/1.1 client). Included from net/CMakeLists.txt; kept in its own file so the client
# and server halves can be edited independently.
target_sources(feedplane_net PRIVATE
  src/fetch_error.cc
  src/http_response.cc
  src/content_decoding.cc
  src/tls_client.cc
  src/dns.cc
  src/http_client.cc
)
target_link_libraries(feedplane_net PUBLIC OpenSSL::SSL OpenSSL::Crypto PkgConfig::cares
  PRIVATE PkgConfig::deflate)
