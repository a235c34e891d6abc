-- Argo CD health of a UnitedDeployment or a WorkloadSpread (apps.united.io and apps.kruise.io),
-- from its status: a paused rollout is Suspended, a Stalled condition of the current generation
-- Degraded, anything the controller has not caught up with Progressing; then a UnitedDeployment
-- is Healthy when Ready=True, a WorkloadSpread (whose pods its workload owns) always.
local hs = {}

local function condition(status, kind)
  if status.conditions ~= nil then
    for _, c in ipairs(status.conditions) do
      if c.type == kind then
        return c
      end
    end
  end
  return nil
end

local function said(c, fallback)
  if c ~= nil and c.message ~= nil and c.message ~= "" then
    return c.message
  end
  if c ~= nil and c.reason ~= nil then
    return c.reason
  end
  return fallback
end

local generation = obj.metadata.generation or 0
local status = obj.status
if status == nil or status.observedGeneration == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for the controller to report status"
  return hs
end

local rollout = status.rollout
if rollout ~= nil and rollout.phase == "Paused" then
  hs.status = "Suspended"
  hs.message = rollout.message or rollout.reason or "Rollout paused"
  return hs
end

local stalled = condition(status, "Stalled")
if stalled ~= nil and stalled.status == "True" and (stalled.observedGeneration or generation) >= generation then
  hs.status = "Degraded"
  hs.message = (stalled.reason or "Stalled") .. ": " .. said(stalled, "")
  return hs
end

if status.observedGeneration < generation then
  hs.status = "Progressing"
  hs.message = "Waiting for the controller to observe generation " .. generation
  return hs
end

local reconciling = condition(status, "Reconciling")
if reconciling ~= nil and reconciling.status == "True" then
  hs.status = "Progressing"
  hs.message = said(reconciling, "Reconciling")
  return hs
end

if rollout ~= nil and rollout.phase == "Progressing" then
  hs.status = "Progressing"
  hs.message = rollout.message or "Rollout in progress"
  return hs
end

local ready = condition(status, "Ready")
if obj.kind == "WorkloadSpread" or (ready ~= nil and ready.status == "True") then
  hs.status = "Healthy"
  hs.message = said(ready, "Ready")
  return hs
end

hs.status = "Progressing"
hs.message = said(ready, "Waiting for the UnitedDeployment to become Ready")
return hs
