//! go-plugin's `plugin.GRPCController` service (from go-plugin's `grpc_controller.proto`, not part of
//! tfplugin6). Terraform ends every provider process by calling `Shutdown` and then waits up to two seconds
//! for it to exit before killing it, so the call must lead to a prompt, clean exit.
//!
//! Written by hand with the same tonic building blocks generated code uses: one unary method whose request
//! and response are `plugin.Empty`.
use std::convert::Infallible;
use std::task::{Context, Poll};
use tokio_util::sync::CancellationToken;
use tonic::codegen::{BoxFuture, Service, StdError, http};

/// `plugin.Empty`.
#[derive(Clone, Copy, PartialEq, prost::Message)]
pub(crate) struct Empty {}

const SHUTDOWN_PATH: &str = "/plugin.GRPCController/Shutdown";

/// Cancels `shutdown` when Terraform calls `Shutdown`; the transport then stops serving.
#[derive(Clone)]
pub(crate) struct ControllerServer {
    shutdown: CancellationToken,
}

impl ControllerServer {
    pub(crate) fn new(shutdown: CancellationToken) -> ControllerServer {
        ControllerServer { shutdown }
    }
}

impl tonic::server::NamedService for ControllerServer {
    const NAME: &'static str = "plugin.GRPCController";
}

struct ShutdownMethod(CancellationToken);

impl tonic::server::UnaryService<Empty> for ShutdownMethod {
    type Response = Empty;
    type Future = BoxFuture<tonic::Response<Empty>, tonic::Status>;

    fn call(&mut self, _: tonic::Request<Empty>) -> Self::Future {
        let token = self.0.clone();
        Box::pin(async move {
            super::log::debug("plugin shutdown requested", &[]);
            token.cancel();
            Ok(tonic::Response::new(Empty {}))
        })
    }
}

impl<B> Service<http::Request<B>> for ControllerServer
where
    B: tonic::codegen::Body + Send + 'static,
    B::Error: Into<StdError> + Send + 'static,
{
    type Response = http::Response<tonic::body::Body>;
    type Error = Infallible;
    type Future = BoxFuture<Self::Response, Infallible>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        if req.uri().path() == SHUTDOWN_PATH {
            let method = ShutdownMethod(self.shutdown.clone());
            Box::pin(async move {
                let mut grpc = tonic::server::Grpc::new(tonic::codec::ProstCodec::<Empty, Empty>::default());
                Ok(grpc.unary(method, req).await)
            })
        } else {
            Box::pin(async { Ok(tonic::Status::unimplemented("unknown GRPCController method").into_http()) })
        }
    }
}
