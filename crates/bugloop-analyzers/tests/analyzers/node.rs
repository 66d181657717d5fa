//! tsc on code that uses Node's own modules or packages, whose types (`@types/node`,
//! `node_modules`) a checkout does not have: a class extending `EventEmitter`,
//! `React.Component` or TypeORM's `BaseEntity` is not said to lack their members, and a module
//! of the project that is not there, or a member a project class lacks, is still a bug.

use bugloop_testkit::TestRepo;

#[tokio::test]
async fn a_class_extending_a_node_module_or_a_package_has_its_members_and_a_lost_module_is_still_said()
 {
    let repo = TestRepo::with_files(&[("src/a.ts", "export const a = 1;\n")]);
    repo.branch("change");
    for (name, module) in [("worker.ts", "node:events"), ("emitter.ts", "events")] {
        repo.write(
            &format!("src/{name}"),
            &format!(
                "import {{ EventEmitter }} from \"{module}\";\nimport {{ readFile }} from \"fs/promises\";\n\n\
                 export class Worker extends EventEmitter {{\n  start(): void {{\n    this.emit(\"start\");\n    void readFile(\"x\");\n  }}\n}}\n"
            ),
        );
    }
    repo.write(
        "src/lost.ts",
        "import { helper } from \"./helpr\";\n\nexport const h = helper;\n",
    );
    repo.write(
        "src/hello.tsx",
        "import React from \"react\";\nimport { BaseEntity } from \"typeorm\";\n\n\
         export class Hello extends React.Component<{ name: string }> {\n  render() {\n    return this.props.name;\n  }\n}\n\n\
         export class User extends BaseEntity {\n  async store(): Promise<void> {\n    await this.save();\n  }\n}\n",
    );
    repo.write(
        "src/local.ts",
        "export class Local {\n  base(): number {\n    return 1;\n  }\n}\n",
    );
    repo.write(
        "src/mine.ts",
        "import { Local } from \"./local\";\n\nexport class Mine extends Local {\n  run(): number {\n    return this.nope();\n  }\n}\n",
    );
    repo.commit("workers");
    let analysis = super::run_built_in(&repo, "tsc").await;
    let found: Vec<(&str, &str)> = analysis
        .candidates
        .iter()
        .map(|c| (c.hit.file.as_str(), c.hit.rule.as_str()))
        .collect();
    assert_eq!(
        found,
        [("src/lost.ts", "TS2307"), ("src/mine.ts", "TS2339")],
        "{analysis:#?}"
    );
}
