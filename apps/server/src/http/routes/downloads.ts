// The drone package, its metadata and the install script: open to anyone (a machine being set up
// has no credential yet); the sha256 in the metadata is what makes the package safe to run.
import { createReadStream } from "node:fs";
import { PROTOCOL_VERSION, rest, UserError } from "@gadget/protocol";
import type { DronePackage, DronePackages } from "../../downloads/drone-package.ts";
import { installScript } from "../../downloads/install-script.ts";
import { type ContractApp, serve } from "../contract.ts";

export interface DownloadRouteDependencies {
  /** The package this server hands out now (none when it was started without one). */
  dronePackages: DronePackages;
  publicUrl: () => string;
}

export function downloadRoutes(app: ContractApp, dependencies: DownloadRouteDependencies): void {
  const base = () => dependencies.publicUrl().replace(/\/+$/, "");
  const packageOrRefuse = async (): Promise<DronePackage> => {
    const found = await dependencies.dronePackages.current();
    if (!found) throw new UserError("not_found", "This server has no drone package to hand out");
    return found;
  };

  serve(app, rest.downloads.dronePackageInfo, async (_request, reply) => {
    const found = await packageOrRefuse();
    reply.header("cache-control", "no-cache");
    return {
      version: found.version,
      protocol: PROTOCOL_VERSION,
      sha256: found.sha256,
      size: found.size,
      url: `${base()}/downloads/${found.fileName}`,
    };
  });

  serve(app, rest.downloads.dronePackage, async (request, reply) => {
    const found = await packageOrRefuse();
    if (request.params.file !== found.fileName) {
      throw new UserError("not_found", `This server hands out ${found.fileName} only`);
    }
    reply.header("content-type", "application/gzip");
    reply.header("content-length", String(found.size));
    reply.header("content-disposition", `attachment; filename="${found.fileName}"`);
    return reply.send(createReadStream(found.file));
  });

  serve(app, rest.downloads.installScript, async (_request, reply) => {
    reply.header("content-type", "text/x-shellscript; charset=utf-8");
    reply.header("cache-control", "no-cache");
    return installScript(base());
  });
}
