# RavenLite server image (docs/deployment.md). Stages:
#   studio  - builds the Studio (npm ci + Vite) in NODE_IMAGE
#   publish - publishes the server in SDK_IMAGE (ReadyToRun: a restart, a database's first open and a C# index's first
#             compile need little JIT; docs/deployment.md) and adds the Studio
#   final   - RUNTIME_IMAGE (ASP.NET Core runtime) running as a non-root user, data in the volume /var/lib/ravenlite
# Every base image is a build arg. PREBUILT=<dir in the build context> uses a `dotnet publish` made outside the
# image instead (the Studio included), for machines that cannot pull the SDK and Node images; the studio and publish
# stages then only copy (tests/deploy/run.sh builds this way on local base images).
ARG NODE_IMAGE=node:22-bookworm-slim
ARG SDK_IMAGE=mcr.microsoft.com/dotnet/sdk:10.0
ARG RUNTIME_IMAGE=mcr.microsoft.com/dotnet/aspnet:10.0

FROM ${NODE_IMAGE} AS studio
LABEL org.opencontainers.image.title=ravenlite
ARG PREBUILT=
WORKDIR /src/Studio
COPY Studio/ ./
RUN mkdir -p /studio && if [ -z "$PREBUILT" ]; then npm ci --no-audit --no-fund && npm run build && cp -r dist/. /studio/; fi

FROM ${SDK_IMAGE} AS publish
LABEL org.opencontainers.image.title=ravenlite
ARG PREBUILT=
WORKDIR /src
COPY . .
COPY --from=studio /studio /studio
RUN if [ -n "$PREBUILT" ]; then cp -r "$PREBUILT" /app; \
    else dotnet publish Server/RavenLite.Server.csproj -c Release --use-current-runtime --self-contained false -p:PublishReadyToRun=true -o /app -p:BuildStudio=false && cp -r /studio /app/studio; fi \
 && test -f /app/RavenLite.Server.dll && test -f /app/studio/index.html

FROM ${RUNTIME_IMAGE}
ARG UID=10001
# The data directory belongs to the server's user.
RUN mkdir -p /var/lib/ravenlite && chown ${UID}:${UID} /var/lib/ravenlite
COPY --from=publish /app /app
# Configured only through RAVENLITE_* variables (docs/deployment.md lists them). Inside a container the server must
# listen beyond loopback; RavenLite refuses that unless told, and this image tells it explicitly: there is no
# authentication yet, so publish the port only where the network is trusted.
ENV RAVENLITE_DataDir=/var/lib/ravenlite \
    RAVENLITE_ServerUrl=http://0.0.0.0:8080 \
    RAVENLITE_AllowUnsecuredNonLoopback=true \
    DOTNET_CLI_TELEMETRY_OPTOUT=1 \
    DOTNET_NOLOGO=1
VOLUME /var/lib/ravenlite
EXPOSE 8080
USER ${UID}:${UID}
WORKDIR /app
HEALTHCHECK --interval=5s --timeout=5s --start-period=30s --retries=3 CMD ["dotnet", "/app/RavenLite.Server.dll", "healthcheck"]
STOPSIGNAL SIGTERM
ENTRYPOINT ["dotnet", "/app/RavenLite.Server.dll"]
