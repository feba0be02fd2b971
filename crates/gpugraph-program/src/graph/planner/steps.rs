//! The steps of [`super::plan`]: contracts in scope, declarations as values, then per
//! operation the table [`OP_STEPS`] (contract, lowering, features, outputs, uses, shapes),
//! then the selected outputs. Each step reads and extends one [`Planner`].

use std::collections::HashMap;
use std::sync::Arc;

use gpugraph_command::wgpu;

use crate::graph::declaration::{Role, ValueSpec};
use crate::graph::error::{BoxError, ProgramError};
use crate::lowering::{Lowering, LoweringSet, LoweringSource};
use crate::operation::contract::check_reference;
use crate::operation::{Access, Operation, OperationContract, Scope};

use super::checks::{check_access, claim_declared, merge_specs, plan_shape};
use super::{
    contract_error, DeclaredState, Plan, PlannedOp, PlannedUse, PlannedValue, ProgramParts,
    ValueRole,
};

/// Planning state shared by the steps.
pub(super) struct Planner<'a> {
    pub graph: String,
    pub ops: &'a [Arc<dyn Operation>],
    lowerings: &'a LoweringSet,
    features: wgpu::Features,
    /// Names each successfully contracted operation writes (producer-order diagnostics).
    written: Vec<Vec<String>>,
    pub values: Vec<PlannedValue>,
    pub index: HashMap<String, usize>,
    declared: HashMap<usize, DeclaredState>,
    pub planned: Vec<PlannedOp>,
}

/// One operation being planned.
pub(super) struct OpPlan {
    i: usize,
    id: String,
    contract: Option<Result<OperationContract, BoxError>>,
    checked: Option<OperationContract>,
    lowering: Option<(Lowering, LoweringSource)>,
    uses: Vec<PlannedUse>,
    names: Vec<String>,
}

/// A per-operation step.
type OpStep = fn(&mut Planner<'_>, &mut OpPlan) -> Result<(), ProgramError>;

/// The per-operation steps, in order: each may rely on what the earlier ones recorded.
pub(super) const OP_STEPS: [(&str, OpStep); 6] = [
    ("contract", |p, op| p.contract(op)),
    ("lowering", |p, op| p.lowering(op)),
    ("features", |p, op| p.features(op)),
    ("outputs", |p, op| p.outputs(op)),
    ("uses", |p, op| p.uses(op)),
    ("shapes", |p, op| p.shapes(op)),
];

/// Every operation's contract, each against the declarations plus earlier results.
pub(super) fn contracts(parts: &ProgramParts<'_>) -> Vec<Result<OperationContract, BoxError>> {
    let mut scope_values: HashMap<String, ValueSpec> = parts
        .declarations
        .iter()
        .map(|d| (d.name.clone(), d.spec.clone()))
        .collect();
    let mut contracts = Vec::with_capacity(parts.operations.len());
    for op in parts.operations {
        let scope = Scope::new(op.id(), &scope_values);
        let c = op.contract(&scope);
        if let Ok(c) = &c {
            for (name, spec) in &c.outputs {
                scope_values
                    .entry(name.clone())
                    .or_insert_with(|| spec.clone());
            }
            for u in &c.values {
                // Declaration-style results (written, not listed as outputs) are visible too.
                if u.access == Access::Write && !scope_values.contains_key(u.value.name()) {
                    if let Some(spec) = u.value.spec() {
                        scope_values.insert(u.value.name().to_string(), spec.clone());
                    }
                }
            }
        }
        contracts.push(c);
    }
    contracts
}

impl<'a> Planner<'a> {
    /// The declarations as values (declared values become results once written).
    pub(super) fn new(
        parts: &ProgramParts<'a>,
        contracts: &[Result<OperationContract, BoxError>],
        lowerings: &'a LoweringSet,
        features: wgpu::Features,
    ) -> Self {
        let written = contracts
            .iter()
            .map(|c| match c {
                Ok(c) => c
                    .outputs
                    .iter()
                    .map(|(n, _)| n.clone())
                    .chain(
                        c.values
                            .iter()
                            .filter(|u| u.access == Access::Write)
                            .map(|u| u.value.name().to_string()),
                    )
                    .collect(),
                Err(_) => Vec::new(),
            })
            .collect();
        let mut values: Vec<PlannedValue> = Vec::new();
        let mut index: HashMap<String, usize> = HashMap::new();
        let mut declared: HashMap<usize, DeclaredState> = HashMap::new();
        for d in parts.declarations {
            let role = match d.role {
                Role::Input => ValueRole::Input,
                Role::State => ValueRole::State,
                // Decided later: a result once written, otherwise an input.
                Role::Declared => ValueRole::Input,
            };
            index.insert(d.name.clone(), values.len());
            if d.role == Role::Declared {
                declared.insert(values.len(), DeclaredState { first_reader: None });
            }
            values.push(PlannedValue {
                name: d.name.clone(),
                spec: d.spec.clone(),
                role,
            });
        }
        Self {
            graph: parts.graph.to_string(),
            ops: parts.operations,
            lowerings,
            features,
            written,
            values,
            index,
            declared,
            planned: Vec::with_capacity(parts.operations.len()),
        }
    }

    /// Runs [`OP_STEPS`] for operation `i` and records it.
    pub(super) fn operation(
        &mut self,
        i: usize,
        contract: Result<OperationContract, BoxError>,
    ) -> Result<(), ProgramError> {
        let mut op = OpPlan {
            i,
            id: self.ops[i].id().to_string(),
            contract: Some(contract),
            checked: None,
            lowering: None,
            uses: Vec::new(),
            names: Vec::new(),
        };
        for (_, step) in OP_STEPS {
            step(self, &mut op)?;
        }
        let (Some(contract), Some((lowering, source))) = (op.checked, op.lowering) else {
            unreachable!("the contract and lowering steps ran")
        };
        self.planned.push(PlannedOp {
            op: self.ops[i].clone(),
            contract,
            uses: op.uses,
            names: op.names,
            lowering,
            source,
        });
        Ok(())
    }

    /// The operation that writes `name` after operation `after`, if any.
    fn later_writer(&self, name: &str, after: usize) -> Option<String> {
        (after + 1..self.ops.len())
            .find(|&j| self.written[j].iter().any(|n| n == name))
            .map(|j| self.ops[j].id().to_string())
    }

    /// An unknown value, or a producer-order error when a later operation writes it.
    fn unknown(&self, op: &OpPlan, value: String) -> ProgramError {
        match self.later_writer(&value, op.i) {
            Some(producer) => ProgramError::ProducerOrder {
                operation: op.id.clone(),
                value,
                producer,
            },
            None => ProgramError::UnknownValue {
                operation: op.id.clone(),
                value,
            },
        }
    }

    /// The contract, or its error (an unknown value named as a producer-order error when a
    /// later operation writes it).
    fn contract(&mut self, op: &mut OpPlan) -> Result<(), ProgramError> {
        let contract = op
            .contract
            .take()
            .unwrap_or_else(|| unreachable!("set by operation()"));
        match contract.map_err(|e| contract_error(&op.id, e)) {
            Ok(c) => {
                op.checked = Some(c);
                Ok(())
            }
            Err(ProgramError::UnknownValue { value, .. }) => Err(self.unknown(op, value)),
            Err(e) => Err(e),
        }
    }

    fn checked(op: &OpPlan) -> &OperationContract {
        op.checked
            .as_ref()
            .unwrap_or_else(|| unreachable!("the contract step ran"))
    }

    /// The registered lowering of the operation's type.
    fn lowering(&mut self, op: &mut OpPlan) -> Result<(), ProgramError> {
        let operation = &self.ops[op.i];
        let (lowering, source) =
            self.lowerings
                .get(operation.operation_type())
                .ok_or_else(|| ProgramError::UnknownLowering {
                    operation: op.id.clone(),
                    operation_type: operation.operation_type().to_string(),
                    known: self.lowerings.types(),
                })?;
        op.lowering = Some((lowering.clone(), source));
        Ok(())
    }

    /// The device features the contract requires.
    fn features(&mut self, op: &mut OpPlan) -> Result<(), ProgramError> {
        let missing = Self::checked(op).required_features - self.features;
        if !missing.is_empty() {
            return Err(ProgramError::MissingFeature {
                operation: op.id.clone(),
                feature: format!("{missing:?}"),
            });
        }
        Ok(())
    }

    /// Outputs: operation-defined results (new values, or declared values claimed).
    fn outputs(&mut self, op: &mut OpPlan) -> Result<(), ProgramError> {
        let (i, id) = (op.i, op.id.clone());
        let contract = Self::checked(op);
        for (name, spec) in &contract.outputs {
            let invalid = |reason: String| ProgramError::InvalidOutput {
                operation: id.clone(),
                value: name.clone(),
                reason,
            };
            if let Err(reason) = spec.check() {
                return Err(invalid(format!("has an invalid declaration: {reason}")));
            }
            if spec.as_vector().is_none() && spec.as_scalar().is_none() {
                return Err(ProgramError::TexturesUnsupported {
                    operation: id.clone(),
                    value: name.clone(),
                });
            }
            if !contract
                .values
                .iter()
                .any(|u| u.value.name() == name && u.access == Access::Write)
            {
                return Err(invalid(
                    "is listed in outputs but not written in the contract's values".into(),
                ));
            }
            match self.index.get(name).copied() {
                None => {
                    self.index.insert(name.clone(), self.values.len());
                    self.values.push(PlannedValue {
                        name: name.clone(),
                        spec: spec.clone(),
                        role: ValueRole::Result { producer: i },
                    });
                }
                Some(v) => {
                    let existing = &self.values[v];
                    match existing.role {
                        ValueRole::Result { producer } if producer == i => {
                            return Err(invalid("is listed twice in outputs".into()));
                        }
                        ValueRole::Result { producer } => {
                            return Err(ProgramError::MultipleWriters {
                                operation: id.clone(),
                                value: name.clone(),
                                writer: self.ops[producer].id().to_string(),
                            });
                        }
                        _ if !self.declared.contains_key(&v) => {
                            return Err(ProgramError::ResultIsDeclared {
                                operation: id.clone(),
                                value: name.clone(),
                                role: existing.role.as_role(),
                            });
                        }
                        _ => {}
                    }
                    if !existing.spec.same_type(spec) {
                        return Err(ProgramError::ReferenceMismatch {
                            operation: id.clone(),
                            value: name.clone(),
                            declared: existing.spec.to_string(),
                            referenced: spec.to_string(),
                        });
                    }
                    let merged = merge_specs(&existing.spec, spec).map_err(invalid)?;
                    claim_declared(&mut self.declared, &self.values, self.ops, v, i)?;
                    self.values[v].spec = merged;
                    self.values[v].role = ValueRole::Result { producer: i };
                }
            }
        }
        Ok(())
    }

    /// Uses: every logical read and write, resolved and access-checked.
    fn uses(&mut self, op: &mut OpPlan) -> Result<(), ProgramError> {
        let (i, id) = (op.i, op.id.clone());
        let n = Self::checked(op).values.len();
        let mut uses: Vec<PlannedUse> = Vec::with_capacity(n);
        let mut names: Vec<String> = Vec::with_capacity(n);
        for u in &Self::checked(op).values {
            let name = u.value.name();
            if names.iter().any(|n| n == name) {
                return Err(ProgramError::DuplicateUse {
                    operation: id.clone(),
                    value: name.to_string(),
                });
            }
            let v = match self.index.get(name).copied() {
                Some(v) => v,
                None => {
                    // A declaration-style result introduced by a typed write.
                    if let (Access::Write, Some(spec)) = (u.access, u.value.spec()) {
                        self.index.insert(name.to_string(), self.values.len());
                        self.values.push(PlannedValue {
                            name: name.to_string(),
                            spec: spec.clone(),
                            role: ValueRole::Result { producer: i },
                        });
                        self.values.len() - 1
                    } else {
                        return Err(self.unknown(op, name.to_string()));
                    }
                }
            };
            check_reference(&id, &u.value, &self.values[v].spec)?;
            let spec = &self.values[v].spec;
            if spec.as_vector().is_none() && spec.as_scalar().is_none() {
                return Err(ProgramError::TexturesUnsupported {
                    operation: id.clone(),
                    value: name.to_string(),
                });
            }
            check_access(
                &id,
                i,
                v,
                u.access,
                &mut self.values,
                &mut self.declared,
                self.ops,
            )?;
            names.push(name.to_string());
            uses.push(PlannedUse {
                value: v,
                access: u.access,
                shape: None,
            });
        }
        op.uses = uses;
        op.names = names;
        Ok(())
    }

    /// Shapes, now that every use of this operation is known.
    fn shapes(&mut self, op: &mut OpPlan) -> Result<(), ProgramError> {
        let contract = Self::checked(op);
        let mut shapes = Vec::new();
        for (k, u) in contract.values.iter().enumerate() {
            let Some(shape) = &u.shape else { continue };
            let v = op.uses[k].value;
            shapes.push((
                k,
                plan_shape(
                    &op.id,
                    &self.values[v],
                    u.access,
                    shape,
                    &op.uses,
                    &self.values,
                )?,
            ));
        }
        for (k, s) in shapes {
            op.uses[k].shape = Some(s);
        }
        Ok(())
    }

    /// The selected outputs: every result, or the named ones (which must be results).
    pub(super) fn finish(self, outputs: Option<&[String]>) -> Result<Plan, ProgramError> {
        let Planner {
            graph,
            values,
            index,
            planned,
            ..
        } = self;
        let selected = match outputs {
            None => (0..values.len())
                .filter(|&v| matches!(values[v].role, ValueRole::Result { .. }))
                .collect(),
            Some(names) => {
                let mut selected = Vec::with_capacity(names.len());
                for name in names {
                    let Some(&v) = index.get(name) else {
                        return Err(ProgramError::UnknownOutput {
                            graph: graph.clone(),
                            value: name.clone(),
                        });
                    };
                    if !matches!(values[v].role, ValueRole::Result { .. }) {
                        return Err(ProgramError::NotAResult {
                            graph: graph.clone(),
                            value: name.clone(),
                            role: values[v].role.as_role(),
                        });
                    }
                    if !selected.contains(&v) {
                        selected.push(v);
                    }
                }
                selected
            }
        };
        Ok(Plan {
            graph,
            values,
            index,
            ops: planned,
            selected,
        })
    }
}
