// dcu-gateway: the fleet's one OpenAI-compatible endpoint per model.
//   dcu-gateway --controller 127.0.0.1:7070 --listen 127.0.0.1:8080
//   dcu-gateway --replicas-file replicas.json --listen 127.0.0.1:8080
// See docs/gateway.md. This file only reads flags and wires the modules.
#include <signal.h>

#include <CLI/CLI.hpp>
#include <fstream>
#include <iostream>
#include <memory>

#include "absl/strings/str_cat.h"
#include "common/http_server.h"
#include "common/logging.h"
#include "common/mutex_mode.h"
#include "common/net.h"
#include "gateway/api_keys.h"
#include "gateway/controller_replica_source.h"
#include "gateway/engine_load_scraper.h"
#include "gateway/file_replica_source.h"
#include "gateway/proxy_server.h"
#include "gateway/replica_picker.h"
#include "gateway/serving_table.h"

int main(int argc, char** argv) {
  dcu::common::TurnOffDeadlockDetectionInReleaseBuilds();
  CLI::App app{"dcu-gateway: one OpenAI-compatible endpoint for the fleet's models"};
  std::string listen = "127.0.0.1:8080";
  std::string replicas_file, api_keys_file, port_file, pick = "least-score";
  dcu::gateway::ControllerSourceOptions controller;
  dcu::gateway::ProxyOptions proxy;
  double queue_timeout_s = 10, connect_timeout_s = 2, upstream_timeout_s = 600;
  size_t max_body_bytes = proxy.max_body_bytes;
  bool verbose = false;
  int scrape_ms = 0;
  std::string metrics_listen;
  app.add_option("--listen", listen, "HOST:PORT to serve on (port 0 picks a free port)");
  app.add_option("--port-file", port_file, "write the bound port to this file once listening");
  app.add_option("--metrics-listen", metrics_listen,
                 "HOST:PORT to serve Prometheus /metrics on, apart from the API (docs/metrics.md); "
                 "off when empty");
  app.add_option("--controller", controller.address,
                 "dcu-controller HOST:PORT to learn replicas from (WatchServing); several, "
                 "comma-separated, for controllers sharing one PostgreSQL database: the gateway "
                 "follows the leader (docs/ha.md)");
  app.add_option("--tls-ca", controller.tls_ca, "PEM CA that signed the controller's certificate");
  app.add_option("--tls-cert", controller.tls_cert, "PEM client certificate");
  app.add_option("--tls-key", controller.tls_key, "PEM private key of --tls-cert (mode 0600)");
  app.add_option("--token-file", controller.token_file, "file (mode 0600) holding a bearer token");
  app.add_flag("--insecure", controller.insecure,
               "allow plaintext to a non-loopback controller (not recommended)");
  app.add_option("--replicas-file", replicas_file,
                 "static replicas (JSON, see docs/gateway.md) instead of the controller");
  app.add_option("--api-keys", api_keys_file,
                 "file of hashed API keys with scopes; without it no key is asked");
  app.add_option("--threads", proxy.threads, "I/O threads")->check(CLI::Range(1, 256));
  app.add_option("--max-body-bytes", max_body_bytes, "largest request body (413 beyond)")
      ->check(CLI::Range(size_t{1}, size_t{1} << 30));
  app.add_option("--queue-size", proxy.queue_size,
                 "requests that may wait for a ready replica at once (503 beyond)")
      ->check(CLI::Range(0, 1000000));
  app.add_option("--queue-timeout", queue_timeout_s,
                 "seconds a request waits for a ready replica before 503")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--connect-timeout", connect_timeout_s, "seconds to connect to a replica")
      ->check(CLI::PositiveNumber);
  app.add_option("--upstream-timeout", upstream_timeout_s,
                 "seconds an upstream exchange may take in all")
      ->check(CLI::PositiveNumber);
  app.add_option("--pick", pick, "least-score (load-aware, default) or round-robin")
      ->check(CLI::IsMember({"least-score", "round-robin"}));
  app.add_option("--scrape-engine-metrics", scrape_ms,
                 "scrape each replica's /metrics every MS milliseconds for the picker "
                 "(0: off; for a replicas file, whose replicas come without engine load)")
      ->check(CLI::Range(0, 600000));
  app.add_flag("-v,--verbose", verbose, "debug logging");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  dcu::common::SetLogComponent("dcu-gateway");
  if (verbose) dcu::common::SetLogLevel(dcu::common::LogLevel::kDebug);
  if (replicas_file.empty() == controller.address.empty()) {
    std::cerr << "error: give exactly one of --controller ADDR and --replicas-file FILE\n";
    return 2;
  }
  auto hp = dcu::common::ParseHostPort(listen);
  if (!hp.ok()) {
    std::cerr << "error: --listen: " << hp.status().message() << "\n";
    return 2;
  }
  proxy.listen_host = hp->host == "localhost" ? "127.0.0.1" : hp->host;
  proxy.listen_port = hp->port;
  proxy.max_body_bytes = max_body_bytes;
  proxy.queue_timeout = absl::Seconds(queue_timeout_s);
  proxy.connect_timeout = absl::Seconds(connect_timeout_s);
  proxy.upstream_timeout = absl::Seconds(upstream_timeout_s);

  // SIGPIPE would kill the process on a write to a client that left.
  signal(SIGPIPE, SIG_IGN);
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);  // before any thread starts

  std::unique_ptr<dcu::gateway::ApiKeyStore> keys;
  if (!api_keys_file.empty()) {
    auto loaded = dcu::gateway::ApiKeyStore::Load(api_keys_file);
    if (!loaded.ok()) {
      std::cerr << "error: --api-keys: " << loaded.status().message() << "\n";
      return 2;
    }
    keys = std::make_unique<dcu::gateway::ApiKeyStore>(*std::move(loaded));
  }

  dcu::gateway::PickerOptions picker_options;
  picker_options.policy = pick == "round-robin" ? dcu::gateway::PickPolicy::kRoundRobin
                                                : dcu::gateway::PickPolicy::kLeastScore;
  dcu::gateway::ReplicaPicker picker(picker_options);
  dcu::gateway::ServingTable table;

  std::unique_ptr<dcu::gateway::ReplicaSource> source;
  if (!replicas_file.empty()) {
    source = std::make_unique<dcu::gateway::FileReplicaSource>(replicas_file);
  } else {
    auto made = dcu::gateway::MakeControllerReplicaSource(controller);
    if (!made.ok()) {
      std::cerr << "error: " << made.status().message() << "\n";
      return 2;
    }
    source = *std::move(made);
  }
  if (scrape_ms > 0) {
    source = std::make_unique<dcu::gateway::ScrapingReplicaSource>(
        std::move(source), std::make_unique<dcu::common::SocketHttpClient>(),
        absl::Milliseconds(scrape_ms));
  }
  absl::Status started = source->Start([&table](dcu::gateway::ServingSet set) {
    DCU_LOG_DEBUG("serving set revision ", set.revision, ": ", set.models.size(), " models");
    table.Replace(std::move(set));
  });
  if (!started.ok()) {
    std::cerr << "error: " << started.message() << "\n";
    return 2;
  }

  // /metrics on a listener of its own: scrapes never queue behind inference
  // traffic and need not pass the API keys.
  std::unique_ptr<dcu::gateway::GatewayMetrics> metrics;
  dcu::common::HttpServerOptions metrics_options;
  metrics_options.name = "dcu-gateway metrics";
  if (!metrics_listen.empty()) {
    if (absl::Status s =
            dcu::common::ParseListenFlag("--metrics-listen", metrics_listen, &metrics_options);
        !s.ok()) {
      std::cerr << "error: " << s.message() << "\n";
      return 2;
    }
    metrics = std::make_unique<dcu::gateway::GatewayMetrics>();
  }
  dcu::gateway::ProxyServer server(proxy, &table, &picker, keys.get(), metrics.get());
  if (absl::Status s = server.Start(); !s.ok()) {
    std::cerr << "error: " << s.message() << "\n";
    return 1;
  }
  std::unique_ptr<dcu::common::HttpServer> metrics_server;
  if (metrics) {
    metrics_server = std::make_unique<dcu::common::HttpServer>(metrics_options);
    metrics_server->Handle("/metrics", [&metrics, &server](const dcu::common::ServedRequest&) {
      return metrics->Scrape(server.queued());
    });
    if (absl::Status s = metrics_server->Start(); !s.ok()) {
      std::cerr << "error: --metrics-listen: " << s.message() << "\n";
      return 1;
    }
    DCU_LOG_INFO("metrics on http://",
                 dcu::common::JoinHostPort(metrics_options.host, metrics_server->port()),
                 "/metrics");
  }
  DCU_LOG_INFO("serving OpenAI API on http://", proxy.listen_host, ":", server.port(), "/v1",
               keys ? absl::StrCat(" (", keys->size(), " API keys)") : std::string());
  if (!port_file.empty()) {
    std::ofstream(port_file) << server.port() << "\n";
  }
  int sig = 0;
  sigwait(&stop_signals, &sig);
  DCU_LOG_INFO("stopping on signal ", sig);
  if (metrics_server) metrics_server->Stop();
  server.Stop();
  source->Stop();
  return 0;
}
