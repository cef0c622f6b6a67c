#pragma once

#include <grpcpp/grpcpp.h>

#include <string>

#include "controller/core/deploy_controller.h"
#include "controller/core/fleet_state.h"
#include "controller/service/fleet_reads.h"
#include "controller/service/owned_threads.h"
#include "controller/store/api_key_store.h"
#include "controller/store/catalog_store.h"
#include "controller/store/node_store.h"
#include "dcufleet/v1/fleet.grpc.pb.h"

namespace dcu::controller {

// FleetService: translates dcuctl's requests to the core and back.
class FleetServiceImpl final : public dcufleet::v1::FleetService::CallbackService {
 public:
  explicit FleetServiceImpl(FleetServiceDeps deps) : deps_(std::move(deps)) {}

  grpc::ServerUnaryReactor* GetVersion(grpc::CallbackServerContext* ctx,
                                       const dcufleet::v1::GetVersionRequest* req,
                                       dcufleet::v1::GetVersionResponse* resp) override;
  grpc::ServerUnaryReactor* ListNodes(grpc::CallbackServerContext* ctx,
                                      const dcufleet::v1::ListNodesRequest* req,
                                      dcufleet::v1::ListNodesResponse* resp) override;
  grpc::ServerUnaryReactor* GetNode(grpc::CallbackServerContext* ctx,
                                    const dcufleet::v1::GetNodeRequest* req,
                                    dcufleet::v1::NodeView* resp) override;
  grpc::ServerUnaryReactor* ReapNode(grpc::CallbackServerContext* ctx,
                                     const dcufleet::v1::ReapNodeRequest* req,
                                     dcufleet::v1::ReapNodeResponse* resp) override;
  grpc::ServerUnaryReactor* CordonNode(grpc::CallbackServerContext* ctx,
                                       const dcufleet::v1::CordonNodeRequest* req,
                                       dcufleet::v1::NodeView* resp) override;
  grpc::ServerUnaryReactor* Deploy(grpc::CallbackServerContext* ctx,
                                   const dcufleet::v1::DeployRequest* req,
                                   dcufleet::v1::DeployResponse* resp) override;
  grpc::ServerUnaryReactor* DeployMany(grpc::CallbackServerContext* ctx,
                                       const dcufleet::v1::DeployManyRequest* req,
                                       dcufleet::v1::DeployManyResponse* resp) override;
  grpc::ServerUnaryReactor* ListDeployments(grpc::CallbackServerContext* ctx,
                                            const dcufleet::v1::ListDeploymentsRequest* req,
                                            dcufleet::v1::ListDeploymentsResponse* resp) override;
  grpc::ServerUnaryReactor* GetDeployment(grpc::CallbackServerContext* ctx,
                                          const dcufleet::v1::GetDeploymentRequest* req,
                                          dcufleet::v1::GetDeploymentResponse* resp) override;
  grpc::ServerWriteReactor<dcufleet::v1::GetDeploymentResponse>* WatchDeployment(
      grpc::CallbackServerContext* ctx, const dcufleet::v1::WatchDeploymentRequest* req) override;
  grpc::ServerUnaryReactor* DeleteDeployment(grpc::CallbackServerContext* ctx,
                                             const dcufleet::v1::DeleteDeploymentRequest* req,
                                             dcufleet::v1::DeleteDeploymentResponse* resp) override;
  grpc::ServerUnaryReactor* ScaleDeployment(grpc::CallbackServerContext* ctx,
                                            const dcufleet::v1::ScaleDeploymentRequest* req,
                                            dcufleet::v1::ScaleDeploymentResponse* resp) override;
  grpc::ServerUnaryReactor* GetLogs(grpc::CallbackServerContext* ctx,
                                    const dcufleet::v1::GetLogsRequest* req,
                                    dcufleet::v1::GetLogsResponse* resp) override;
  grpc::ServerUnaryReactor* ListEvents(grpc::CallbackServerContext* ctx,
                                       const dcufleet::v1::ListEventsRequest* req,
                                       dcufleet::v1::ListEventsResponse* resp) override;
  grpc::ServerUnaryReactor* CreateApiKey(grpc::CallbackServerContext* ctx,
                                         const dcufleet::v1::CreateApiKeyRequest* req,
                                         dcufleet::v1::CreateApiKeyResponse* resp) override;
  grpc::ServerUnaryReactor* ListApiKeys(grpc::CallbackServerContext* ctx,
                                        const dcufleet::v1::ListApiKeysRequest* req,
                                        dcufleet::v1::ListApiKeysResponse* resp) override;
  grpc::ServerUnaryReactor* RevokeApiKey(grpc::CallbackServerContext* ctx,
                                         const dcufleet::v1::RevokeApiKeyRequest* req,
                                         dcufleet::v1::RevokeApiKeyResponse* resp) override;
  grpc::ServerUnaryReactor* ListStacks(grpc::CallbackServerContext* ctx,
                                       const dcufleet::v1::ListStacksRequest* req,
                                       dcufleet::v1::ListStacksResponse* resp) override;
  grpc::ServerUnaryReactor* GetStack(grpc::CallbackServerContext* ctx,
                                     const dcufleet::v1::GetStackRequest* req,
                                     dcufleet::v1::GetStackResponse* resp) override;
  grpc::ServerUnaryReactor* ImportCatalog(grpc::CallbackServerContext* ctx,
                                          const dcufleet::v1::ImportCatalogRequest* req,
                                          dcufleet::v1::ImportCatalogResponse* resp) override;
  grpc::ServerUnaryReactor* ListModels(grpc::CallbackServerContext* ctx,
                                       const dcufleet::v1::ListModelsRequest* req,
                                       dcufleet::v1::ListModelsResponse* resp) override;
  grpc::ServerUnaryReactor* ListEvidence(grpc::CallbackServerContext* ctx,
                                         const dcufleet::v1::ListEvidenceRequest* req,
                                         dcufleet::v1::ListEvidenceResponse* resp) override;
  grpc::ServerUnaryReactor* CopyModel(grpc::CallbackServerContext* ctx,
                                      const dcufleet::v1::CopyModelRequest* req,
                                      dcufleet::v1::CopyModelResponse* resp) override;
  // serving_watch.cc
  grpc::ServerWriteReactor<dcufleet::v1::ServingSnapshot>* WatchServing(
      grpc::CallbackServerContext* ctx, const dcufleet::v1::WatchServingRequest* req) override;

 private:
  FleetServiceDeps deps_;
  // Declared after deps_ so that they are joined before it goes: the
  // destructor waits for in-flight agent commands (ReapNode, GetLogs) and
  // watch loops. Destroy the service after the server's Shutdown, which
  // ends every call (a watch loop returns once its call is cancelled).
  OwnedThreads commands_;
  OwnedThreads watches_;
};

}  // namespace dcu::controller
